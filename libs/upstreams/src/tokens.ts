import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Tiktoken } from 'js-tiktoken';

let encoder: Tiktoken | undefined;

function loadEncoder(): Tiktoken {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { getEncoding } = require('js-tiktoken') as typeof import('js-tiktoken');
  return getEncoding('o200k_base');
}

/**
 * Counts tokens the way OpenAI-family models do (o200k_base): for a broken stream, where the upstream never
 * reported usage, and for upstreams that report none (rerank).
 */
export function countTokens(text: string): number {
  if (!text) return 0;
  encoder ??= loadEncoder();
  return encoder.encode(text).length;
}

/**
 * Loading the encoder takes over a second of CPU; servers do it before they listen so no request waits for it.
 * Tests and scripts skip it and load on first use.
 */
export function warmTokenizer(): void {
  encoder ??= loadEncoder();
}

/**
 * Above this many characters a count runs in a worker thread: encoding is about a microsecond per character, so a
 * large prompt counted on the event loop would stall every other request for milliseconds.
 */
export const OFF_THREAD_CHARS = 32 * 1024;

let worker: { thread: Worker; pending: Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>; next: number } | undefined;

function tokenWorker(): NonNullable<typeof worker> {
  if (worker) return worker;
  const thread = new Worker(path.join(__dirname, 'tokens-worker.js'));
  // Idle, it must not keep a process alive that has nothing else to do.
  thread.unref();
  const w = { thread, pending: new Map(), next: 0 };
  const failAll = (e: Error) => {
    for (const p of w.pending.values()) p.reject(e);
    w.pending.clear();
    if (worker === w) worker = undefined;
  };
  thread.on('message', (m: { id: number; count?: number; error?: string }) => {
    const p = w.pending.get(m.id);
    w.pending.delete(m.id);
    if (m.error !== undefined || m.count === undefined) p?.reject(new Error(`token count failed: ${m.error}`));
    else p?.resolve(m.count);
  });
  thread.on('error', failAll);
  thread.on('exit', () => failAll(new Error('the token counting worker exited')));
  worker = w;
  return w;
}

/** Ends the counting worker, if one runs (tests; a server's exit ends it anyway). */
export async function stopTokenWorker(): Promise<void> {
  const w = worker;
  worker = undefined;
  await w?.thread.terminate();
}

/** countTokens, in a worker thread when the text is large (OFF_THREAD_CHARS), so the event loop keeps serving. */
export function countTokensAsync(text: string): Promise<number> {
  if (text.length < OFF_THREAD_CHARS) return Promise.resolve(countTokens(text));
  const w = tokenWorker();
  const id = w.next++;
  return new Promise((resolve, reject) => {
    w.pending.set(id, { resolve, reject });
    w.thread.postMessage({ id, text });
  });
}

/** An upper bound on the tokens of any byte-level BPE tokenizer: a token covers at least one byte. */
export function maxTokensOf(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
