import path from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * How long the worker may go without a count before it is ended. Its encoder is ~80 MiB of heap and the thread
 * ~150 MiB of RSS in all, which only ending the thread gives back: a gateway that streamed once must not keep it for
 * ever. Streams count at every checkpoint (seconds apart), so one running keeps it; reloading it costs about a second
 * of CPU on the other core, started a little before a stream's first checkpoint (warmTokenizer).
 */
export const TOKEN_WORKER_IDLE_MS = 60_000;

interface TokenWorker {
  thread: Worker;
  pending: Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>;
  next: number;
  idle?: NodeJS.Timeout;
}

let worker: TokenWorker | undefined;

/** Ends `w` once it has had no count for TOKEN_WORKER_IDLE_MS; a count before then cancels this (countTokens). */
function armIdleEnd(w: TokenWorker): void {
  clearTimeout(w.idle);
  w.idle = setTimeout(() => {
    // Forgotten before it ends: a count from now on starts a new worker instead of going to one that is ending.
    if (worker === w) worker = undefined;
    void w.thread.terminate();
  }, TOKEN_WORKER_IDLE_MS);
  // The timer must not keep alive a process that has nothing else to do, no more than the idle thread does.
  w.idle.unref();
}

function tokenWorker(): TokenWorker {
  if (worker) return worker;
  const thread = new Worker(path.join(__dirname, 'tokens-worker.js'));
  // Idle, it must not keep a process alive that has nothing else to do; counting, it must (see countTokens).
  thread.unref();
  const w: TokenWorker = { thread, pending: new Map(), next: 0 };
  const failAll = (e: Error) => {
    clearTimeout(w.idle);
    for (const p of w.pending.values()) p.reject(e);
    w.pending.clear();
    if (worker === w) worker = undefined;
  };
  thread.on('message', (m: { id: number; count?: number; error?: string }) => {
    const p = w.pending.get(m.id);
    w.pending.delete(m.id);
    if (w.pending.size === 0) {
      thread.unref();
      armIdleEnd(w);
    }
    if (m.error !== undefined || m.count === undefined) p?.reject(new Error(`token count failed: ${m.error}`));
    else p?.resolve(m.count);
  });
  thread.on('error', failAll);
  thread.on('exit', () => failAll(new Error('the token counting worker exited')));
  worker = w;
  // Started by warmTokenizer for a stream that then counts nothing, it ends all the same.
  armIdleEnd(w);
  return w;
}

/** Whether a counting worker runs now (tests: the idle end, the restart). */
export function tokenWorkerRunning(): boolean {
  return worker !== undefined;
}

/** Ends the counting worker, if one runs; the counts it still held fail. */
export async function stopTokenWorker(): Promise<void> {
  const w = worker;
  worker = undefined;
  if (!w) return;
  clearTimeout(w.idle);
  await w.thread.terminate();
}

let claims = 0;

/**
 * A server's hold on the counting worker while it serves; the release it returns ends the worker once no other
 * server of the process holds it (tests run several gateways in one process). A closed server must leave no thread:
 * a count still pending at close (a cut stream's) keeps the worker referenced and the process from exiting.
 */
export function claimTokenWorker(): () => Promise<void> {
  claims++;
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    if (--claims === 0) await stopTokenWorker();
  };
}

/**
 * Token counts (o200k_base, as OpenAI-family models count): for a broken stream, where the upstream never reported
 * usage, and for upstreams that report none (rerank, some embeddings).
 *
 * Every count runs in one worker thread. Encoding is about a microsecond per character, so a large prompt counted on
 * the event loop would stall every other request for milliseconds. And the encoder's tables are about 80 MiB of live
 * JS heap: in the serving thread they made V8 size its old generation from a live set three times larger than the
 * server's own, which under load grew RSS by hundreds of MiB. A count of a small text costs a message round trip
 * (tens of microseconds) on paths that are already the fallback.
 */
export function countTokens(text: string): Promise<number> {
  if (!text) return Promise.resolve(0);
  const w = tokenWorker();
  const id = w.next++;
  clearTimeout(w.idle);
  if (w.pending.size === 0) w.thread.ref();
  return new Promise((resolve, reject) => {
    w.pending.set(id, { resolve, reject });
    w.thread.postMessage({ id, text });
  });
}

/** The tokens of several texts together (rerank's query and documents), counted side by side. */
export async function countTokensOfAll(texts: readonly string[]): Promise<number> {
  const counts = await Promise.all(texts.map(countTokens));
  return counts.reduce((n, c) => n + c, 0);
}

/**
 * Starts the worker, if none runs, which loads the encoder (over a second of CPU) on the other core. Called a little
 * before a stream's first checkpoint is due (both run modes, run-chat.ts), so that checkpoint does not wait for the
 * load; nothing loads it at start, and a stream that ends before then with its upstream's usage never does. Otherwise
 * the first count starts it. Unused, it ends after TOKEN_WORKER_IDLE_MS.
 */
export function warmTokenizer(): void {
  const w = tokenWorker();
  // A worker near its idle end would end under this stream, and its first checkpoint wait for a new one's load.
  if (w.pending.size === 0) armIdleEnd(w);
}
