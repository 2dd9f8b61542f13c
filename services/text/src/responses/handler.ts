import { contextOf, validate, sendJson, type PostRoutes } from '@gateway/service-kit';
import { chatCallOf } from '../chat-flow/chat-call';
import { completeChat, streamChat, type TextDeps } from '../chat-flow/run-chat';
import { sendEvent } from '../chat-flow/sse';
import { responsesBody } from './schema';
import { echoOf, toChatBody } from './translate-request';
import { fromCompletion } from './translate-response';
import { responsesSink } from './stream-sink';

/** POST /v1/responses: translated onto the shared chat flow, so every text model answers and is billed the same way. */
export function mountResponses(r: PostRoutes, deps: TextDeps): void {
  r.post('/v1/responses', async (req, res) => {
    const body = validate(responsesBody, req.body);
    const createdAt = Math.floor(Date.now() / 1000);
    const echo = echoOf(body);
    const call = chatCallOf(body, toChatBody(body));
    if (!call.stream) {
      const { completion, model, usage, requestId } = await completeChat(contextOf(req), deps, call);
      sendJson(res, fromCompletion({ id: requestId, createdAt, model: model.config.id, echo }, completion, usage));
      return;
    }
    await streamChat(
      contextOf(req),
      res,
      deps,
      call,
      responsesSink((type, payload) => sendEvent(res, type, payload), createdAt, echo),
    );
  });
}
