import { errorEnvelope } from '@gateway/errors';
import { contextOf, validate, sendJson, type PostRoutes } from '@gateway/service-kit';
import { chatCallOf } from '../chat-flow/chat-call';
import { completeChat, streamChat, type TextDeps } from '../chat-flow/run-chat';
import { sendData } from '../chat-flow/sse';
import { chatCompletionBody, upstreamBody } from './schema';

/** POST /v1/chat/completions, streamed and not: the OpenAI shape passes through, with the gateway's id, slug and cost. */
export function mountChatCompletions(r: PostRoutes, deps: TextDeps): void {
  r.post('/v1/chat/completions', async (req, res) => {
    const body = validate(chatCompletionBody, req.body);
    const call = chatCallOf(body, upstreamBody(body), body.models);
    if (!call.stream) {
      const { completion, model, usage, requestId } = await completeChat(contextOf(req), deps, call);
      sendJson(res, { ...completion, id: requestId, object: 'chat.completion', model: model.config.id, usage });
      return;
    }
    let slug = '';
    let id = '';
    await streamChat(contextOf(req), res, deps, call, {
      start(model, requestId) {
        slug = model.config.id;
        id = requestId;
      },
      chunk(chunk) {
        sendData(res, { ...chunk, id, model: slug });
      },
      finish(usage) {
        sendData(res, { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: slug, choices: [], usage });
        sendData(res, '[DONE]');
      },
      fail(error) {
        sendData(res, errorEnvelope(error, id));
        sendData(res, '[DONE]');
      },
    });
  });
}
