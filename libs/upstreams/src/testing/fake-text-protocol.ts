import type { ResolvedEndpoint } from '@gateway/config';
import type { ChatChunk, ChatCompletion, ChatUsage, TextProtocol } from '../types';
import { UpstreamError } from '../upstream-error';

/**
 * A text protocol without HTTP, for the tests of what calls one (the money flow, the chat flow): each endpoint
 * answers, fails, breaks or stalls as its Behaviour says. The HTTP protocols themselves are tested on recorded
 * bytes instead (conformance.test.ts).
 */

let seq = 0;
const next = () => ++seq;

/** How one fake endpoint answers: the pieces of its reply, or a throw for a failed attempt. */
export interface Reply {
  /** One chunk each when streamed, joined when not. */
  pieces: string[];
  /** What the upstream reports; streamed, it comes in a last chunk without choices. */
  usage?: ChatUsage;
  finishReason?: string;
  /** Streamed: after the pieces the stream breaks with this instead of finishing. Not streamed: the call fails. */
  breakWith?: Error;
  /** Streamed: the wait before each piece, as a model generating slowly. */
  gapMs?: number;
  /**
   * Streamed: after the pieces the stream stays open until the caller aborts it, and notices the abort this many ms
   * late, as a real upstream connection may.
   */
  openUntilAbortedMs?: number;
}

export interface UpstreamCall {
  endpoint: string;
  stream: boolean;
  body: Record<string, unknown>;
  signal?: AbortSignal;
}

export type Behaviour = (call: UpstreamCall) => Reply | Promise<Reply>;

/** An endpoint that answers `text`, reporting `usage` when given. */
export const answers =
  (text: string, usage?: ChatUsage): Behaviour =>
  () => ({ pieces: [text], usage });

/** An endpoint that refuses with `status` before answering: 5xx and 429 fail over, 400 is the client's fault. */
export const fails =
  (status = 503): Behaviour =>
  () => {
    throw new UpstreamError('status', `fake upstream answered ${status}`, status);
  };

export interface FakeTextProtocol {
  protocol: TextProtocol;
  /** Every attempt, in order. */
  calls: UpstreamCall[];
}

/**
 * A text protocol without HTTP. An endpoint with no behaviour is unreachable. Streams open with a role-only chunk
 * (as OpenAI's do), and check the signal before each further chunk, as a real connection torn down would.
 */
export function fakeTextProtocol(behaviours: Record<string, Behaviour>): FakeTextProtocol {
  const calls: UpstreamCall[] = [];
  const reply = async (ep: ResolvedEndpoint, body: Record<string, unknown>, signal: AbortSignal | undefined, stream: boolean): Promise<Reply> => {
    const call = { endpoint: ep.key, stream, body, signal };
    calls.push(call);
    const behaviour = behaviours[ep.key];
    if (!behaviour) throw new UpstreamError('connect', `fake upstream: nothing listens at ${ep.key}`);
    return behaviour(call);
  };
  const head = (ep: ResolvedEndpoint) => ({ id: `up_${next()}`, created: 0, model: ep.upstreamModel });
  return {
    calls,
    protocol: {
      async chat(ep, body, opts): Promise<ChatCompletion> {
        const r = await reply(ep, body, opts.signal, false);
        if (r.breakWith) throw r.breakWith;
        const message = { role: 'assistant', content: r.pieces.join('') };
        return { ...head(ep), object: 'chat.completion', choices: [{ index: 0, message, finish_reason: r.finishReason ?? 'stop' }], usage: r.usage };
      },
      async chatStream(ep, body, opts): Promise<AsyncIterable<ChatChunk>> {
        const r = await reply(ep, body, opts.signal, true);
        const chunk = (delta: ChatChunk['choices'][number]['delta'], finish: string | null = null): ChatChunk => ({
          ...head(ep),
          object: 'chat.completion.chunk',
          choices: [{ index: 0, delta, finish_reason: finish }],
        });
        return (async function* () {
          yield chunk({ role: 'assistant', content: '' });
          for (const piece of r.pieces) {
            if (r.gapMs) await new Promise((resolve) => setTimeout(resolve, r.gapMs));
            opts.signal?.throwIfAborted();
            yield chunk({ content: piece });
          }
          const { signal } = opts;
          if (r.openUntilAbortedMs !== undefined && signal) {
            const late = r.openUntilAbortedMs;
            await new Promise((_resolve, reject) => signal.addEventListener('abort', () => setTimeout(() => reject(signal.reason), late)));
          }
          opts.signal?.throwIfAborted();
          if (r.breakWith) throw r.breakWith;
          yield chunk({}, r.finishReason ?? 'stop');
          if (r.usage) yield { ...head(ep), object: 'chat.completion.chunk', choices: [], usage: r.usage };
        })();
      },
    },
  };
}
