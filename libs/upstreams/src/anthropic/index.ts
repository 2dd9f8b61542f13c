import type { ResolvedEndpoint } from '@gateway/config';
import type { CallOptions, TextProtocol } from '../types';
import { classify } from '../upstream-error';
import { createUpstreamClient } from '../http';
import { toMessagesRequest } from './request';
import { toChatCompletion } from './response';
import { toChatChunks } from './stream';
import { readMessagesAnswer } from './schema';
import type { MalformedUsage } from '../answer-schema';

const API_VERSION = '2023-06-01';

/**
 * Message-API upstreams (`kind: anthropic`): POST {base_url}/messages, key in `x-api-key`. Chat in, chat out, so
 * every text route reaches these models through the one chat flow. Overloaded (529), rate-limited and 5xx answers
 * fail over; 400/413/422 are the client's own (see upstream-error.ts).
 */
export function createAnthropicProtocol(env: NodeJS.ProcessEnv = process.env, malformedUsage: MalformedUsage = () => {}): TextProtocol {
  const client = createUpstreamClient({ auth: (key) => ({ 'x-api-key': key }), headers: { 'anthropic-version': API_VERSION } }, env);
  const messages = (ep: ResolvedEndpoint, body: Record<string, unknown>, opts: CallOptions) =>
    toMessagesRequest(body, ep.upstreamModel, opts.maxOutputTokens) as unknown as Record<string, unknown>;

  return {
    async chat(ep, body, opts) {
      const json = await client.jsonWhole(ep, '/messages', messages(ep, { ...body, stream: false }, opts), opts);
      // An answer in the wrong shape is the upstream's fault (a protocol failure): the next endpoint may take over.
      return toChatCompletion(readMessagesAnswer(json, (issue) => malformedUsage(ep, issue)));
    },
    async chatStream(ep, body, opts) {
      const frames = await client.sse(ep, '/messages', messages(ep, { ...body, stream: true }, opts), opts);
      return (async function* () {
        try {
          yield* toChatChunks(frames, (issue) => malformedUsage(ep, issue));
        } catch (e) {
          throw classify(e);
        }
      })();
    },
  };
}
