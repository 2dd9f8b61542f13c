import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { AddressRefusedError, checkTarget, pinnedAgent, type Resolver } from './address-guard';
import { signedHeaders } from './sign';

export const DEFAULT_ATTEMPT_TIMEOUT_MS = 10_000;
/** The answer is drained only this far: a receiver owes us a status, not a body, and must not make us buffer one. */
export const MAX_ANSWER_BYTES = 4096;

export type AttemptOutcome = 'delivered' | 'http_error' | 'timeout' | 'connection_error' | 'refused';

export interface AttemptResult {
  outcome: AttemptOutcome;
  /** The receiver's status, or null when none came. */
  statusCode: number | null;
  /** Why the attempt failed; null when delivered. */
  error: string | null;
  durationMs: number;
  /** The checked address the connection went to; undefined when refused before dialling. */
  address?: string;
}

export interface AttemptInput {
  url: string;
  /** The delivery id: X-Gateway-Webhook-Id. */
  id: string;
  /** The exact bytes to send and sign. */
  body: string | Buffer;
  secret: string;
  /** Unix seconds of this attempt: X-Gateway-Webhook-Timestamp. */
  timestamp: number;
  allowPrivateAddresses: boolean;
  timeoutMs?: number;
  resolve?: Resolver;
}

/**
 * One attempt: check and pin the address, POST the body with the signed headers, and classify the answer. Any 2xx is
 * delivered; any other status, a redirect included (never followed: it could point anywhere), no answer within the
 * timeout (which covers resolving, connecting and the answer's head), a connection error or a refused address is a
 * failed attempt. Never throws.
 */
export async function sendWebhook(input: AttemptInput): Promise<AttemptResult> {
  const started = performance.now();
  const timeoutMs = input.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const elapsed = () => Math.round(performance.now() - started);
  let address: string | undefined;
  let agent: ReturnType<typeof pinnedAgent> | undefined;
  try {
    const target = await raceAbort(
      checkTarget(input.url, { resolve: input.resolve, allowPrivateAddresses: input.allowPrivateAddresses }),
      abort.signal,
    );
    address = target.address;
    agent = pinnedAgent(target, { connectTimeoutMs: timeoutMs });
    const body = typeof input.body === 'string' ? Buffer.from(input.body, 'utf8') : input.body;
    const answer = await request(target.url, {
      method: 'POST',
      body,
      headers: {
        ...signedHeaders({ secret: input.secret, id: input.id, timestamp: input.timestamp, body }),
        'User-Agent': 'model-gateway-webhooks/1',
      },
      dispatcher: agent,
      signal: abort.signal,
    });
    await drain(answer.body, MAX_ANSWER_BYTES);
    const ok = answer.statusCode >= 200 && answer.statusCode < 300;
    return {
      outcome: ok ? 'delivered' : 'http_error',
      statusCode: answer.statusCode,
      error: ok ? null : `receiver answered ${answer.statusCode}`,
      durationMs: elapsed(),
      address,
    };
  } catch (e) {
    const err = e as Error & { code?: string };
    const at = address ? ` (${address})` : '';
    if (err instanceof AddressRefusedError)
      return { outcome: 'refused', statusCode: null, error: `refused: ${err.message}`, durationMs: elapsed(), address };
    if (abort.signal.aborted)
      return { outcome: 'timeout', statusCode: null, error: `no answer within ${timeoutMs} ms${at}`, durationMs: elapsed(), address };
    const reason = err.code ?? (err.cause as { code?: string } | undefined)?.code ?? err.message;
    return { outcome: 'connection_error', statusCode: null, error: `${reason}${at}`, durationMs: elapsed(), address };
  } finally {
    clearTimeout(timer);
    // destroy, not close: close would wait for a receiver that never answers.
    await agent?.destroy().catch(() => undefined);
  }
}

/** Reads at most `limit` bytes, then drops the rest of the stream, so a receiver that talks on cannot hold us. */
async function drain(body: AsyncIterable<Buffer> & { destroy(): unknown }, limit: number): Promise<void> {
  let seen = 0;
  for await (const chunk of body) {
    seen += chunk.length;
    if (seen >= limit) break;
  }
  body.destroy();
}

function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error('aborted'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
