import type { TextProtocol } from '../types';
import { UpstreamError, classify } from '../upstream-error';
import { createJsonPost } from '../http';
import { sseData } from '../sse';
import { toMessagesRequest } from './request';
import { toChatCompletion } from './response';
import { toChatChunks } from './stream';
import type { MessagesAnswer } from './wire';

const API_VERSION = '2023-06-01';

/**
 * Message-API upstreams (`kind: anthropic`): POST {base_url}/messages, key in `x-api-key`. Chat in, chat out, so
 * every text route reaches these models through the one chat flow. Overloaded (529), rate-limited and 5xx answers
 * fail over; 400/413/422 are the client's own (see upstream-error.ts).
 */
export function createAnthropicProtocol(env: NodeJS.ProcessEnv = process.env): TextProtocol {
  const send = createJsonPost({ auth: (key) => ({ 'x-api-key': key }), headers: { 'anthropic-version': API_VERSION } }, env);
  const post: (...a: Parameters<TextProtocol['chat']>) => ReturnType<typeof send> = (ep, body, opts) =>
    send(ep, '/messages', toMessagesRequest(body, ep.upstreamModel, opts.maxOutputTokens) as unknown as Record<string, unknown>, opts);

  return {
    async chat(ep, body, opts) {
      const res = await post(ep, { ...body, stream: false }, opts);
      let text: string;
      try {
        text = await res.body.text();
      } catch (e) {
        throw classify(e);
      }
      let answer: MessagesAnswer | undefined;
      try {
        answer = JSON.parse(text);
      } catch {
        /* judged below */
      }
      // An answer in the wrong shape is the upstream's fault: the next endpoint may take over.
      if (answer?.type !== 'message' || !Array.isArray(answer.content)) throw new UpstreamError('protocol', 'upstream answer is not a message');
      return toChatCompletion(answer);
    },
    async chatStream(ep, body, opts) {
      const res = await post(ep, { ...body, stream: true }, opts);
      return (async function* () {
        try {
          yield* toChatChunks(sseData(res.body));
        } catch (e) {
          throw classify(e);
        }
      })();
    },
  };
}
