import type { Dispatcher } from 'undici';

/** One chat call's outcome, its whole answer read; a reset or a cut body is an outcome, not a test failure. */
export interface ChatOutcome {
  status: number;
  requestId: string | null;
  body: string;
  /** The connection broke (reset, or the body was cut before its end). */
  broken: boolean;
}

/** One small chat call to the gateway at `url`, streamed when asked; `onBody` sees the answer grow as it arrives. */
export async function chatOnce(
  url: string,
  key: string,
  model: string,
  opts: { stream?: boolean; onBody?: (soFar: string) => void; dispatcher?: Dispatcher } = {},
): Promise<ChatOutcome> {
  let res: Response;
  try {
    res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, max_tokens: 5, stream: opts.stream ?? false, messages: [{ role: 'user', content: 'ping' }] }),
      // Node's fetch takes undici's dispatcher (its own undici underneath); the DOM typing does not list it.
      ...(opts.dispatcher ? { dispatcher: opts.dispatcher } : {}),
    } as RequestInit);
  } catch {
    return { status: 0, requestId: null, body: '', broken: true };
  }
  const requestId = res.headers.get('x-gateway-request-id');
  let body = '';
  try {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      body += decoder.decode(value, { stream: true });
      opts.onBody?.(body);
    }
  } catch {
    return { status: res.status, requestId, body, broken: true };
  }
  return { status: res.status, requestId, body, broken: false };
}

/**
 * Light load: `callers` loops of `call`, each pausing a little after an answer and longer after a refusal (a fault
 * under way); stop() waits for their last calls.
 */
export function callerLoop<O extends { status: number }>(call: () => Promise<O>, callers: number) {
  const results: O[] = [];
  let running = true;
  const loops = Array.from({ length: callers }, async () => {
    while (running) {
      const o = await call();
      results.push(o);
      await new Promise((r) => setTimeout(r, o.status === 200 ? 10 : 100));
    }
  });
  return {
    results,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}
