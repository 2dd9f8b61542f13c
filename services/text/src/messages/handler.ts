import { contextOf, validate, sendJson, type PostRoutes } from '@gateway/service-kit';
import { chatCallOf } from '../chat-flow/chat-call';
import { completeChat, streamChat, type TextDeps } from '../chat-flow/run-chat';
import { sendEvent } from '../chat-flow/sse';
import { messagesBody } from './schema';
import { messagesStreamSink } from './stream-sink';
import { toChatBody, toMessage } from './translate';

/** A quiet upstream (a long first token, a slow tool argument) must not let idle-timeout proxies cut the stream. */
const PING_INTERVAL_MS = 10_000;

/** POST /v1/messages: the message API over the one chat flow, so every text model answers it. */
export function mountMessages(r: PostRoutes, deps: TextDeps): void {
  r.post('/v1/messages', async (req, res) => {
    const body = validate(messagesBody, req.body);
    const call = chatCallOf(body, toChatBody(body));
    if (!call.stream) {
      sendJson(res, toMessage(await completeChat(contextOf(req), deps, call)));
      return;
    }
    const sink = messagesStreamSink((event, payload) => sendEvent(res, event, payload));
    let pings: NodeJS.Timeout | undefined;
    try {
      await streamChat(contextOf(req), res, deps, call, {
        ...sink,
        start(model, requestId) {
          sink.start(model, requestId);
          pings = setInterval(() => sendEvent(res, 'ping', { type: 'ping' }), PING_INTERVAL_MS);
        },
      });
    } finally {
      clearInterval(pings);
    }
  });
}
