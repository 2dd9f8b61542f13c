import type { ResolvedEndpoint } from '@gateway/config';
import type { CallOptions, TextProtocol } from '../types';
import { UpstreamError, classify } from '../upstream-error';
import { createUpstreamClient } from '../http';
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
  const client = createUpstreamClient({ auth: (key) => ({ 'x-api-key': key }), headers: { 'anthropic-version': API_VERSION } }, env);
  const messages = (ep: ResolvedEndpoint, body: Record<string, unknown>, opts: CallOptions) =>
    toMessagesRequest(body, ep.upstreamModel, opts.maxOutputTokens) as unknown as Record<string, unknown>;

  return {
    async chat(ep, body, opts) {
      let answer: MessagesAnswer | undefined;
      try {
        answer = (await client.jsonWhole(ep, '/messages', messages(ep, { ...body, stream: false }, opts), opts)) as MessagesAnswer;
      } catch (e) {
        // Not JSON is judged below with every other wrong shape.
        if (!(e instanceof UpstreamError && e.kind === 'protocol')) throw e;
      }
      // An answer in the wrong shape is the upstream's fault: the next endpoint may take over.
      if (answer?.type !== 'message' || !Array.isArray(answer.content)) throw new UpstreamError('protocol', 'upstream answer is not a message');
      return toChatCompletion(answer);
    },
    async chatStream(ep, body, opts) {
      const res = await client.json(ep, '/messages', messages(ep, { ...body, stream: true }, opts), opts);
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
