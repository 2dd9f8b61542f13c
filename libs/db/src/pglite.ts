import fs from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Db, Queryable, Row } from './db';

/** What pglite-worker.js posts back for each request. */
type WorkerReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { message: string; code?: string; constraint?: string } };

/**
 * Embedded PostgreSQL in a worker thread (see pglite-worker.js): the WebAssembly database gets its own core and
 * the HTTP event loop stays free. `dir` undefined keeps it in memory (tests).
 */
export async function openPglite(dir?: string): Promise<Db> {
  const worker = new Worker(path.join(__dirname, 'pglite-worker.js'), { workerData: { dir, wasmModule: await pgliteModule() } });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  let nextId = 1;
  let nextTx = 1;
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('message', (m: { ready: boolean; error?: string }) =>
      m.ready ? resolve() : reject(new Error(`PGlite failed to start: ${m.error}`)),
    );
  });
  worker.on('message', (m: WorkerReply) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.ok) p.resolve(m.result);
    else p.reject(Object.assign(new Error(m.error.message), { code: m.error.code, constraint: m.error.constraint }));
  });
  worker.on('error', (e) => {
    for (const p of pending.values()) p.reject(e);
    pending.clear();
  });

  const send = <T>(msg: Record<string, unknown>): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      // The worker's answer is untyped: T is what the caller's SQL selects.
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ ...msg, id });
    });
  const on = (tx?: number): Queryable => ({
    query: <T extends Row>(sql: string, params?: unknown[]) =>
      send<T[]>({ op: 'query', sql, params: params?.map((p) => (typeof p === 'bigint' ? p.toString() : p)), tx }),
    exec: (sql: string) => send<void>({ op: 'exec', sql, tx }),
  });
  const base = on();
  return {
    kind: 'pglite',
    query: base.query,
    exec: base.exec,
    async transaction(fn) {
      const tx = nextTx++;
      await send({ op: 'begin', tx });
      try {
        const out = await fn(on(tx));
        await send({ op: 'commit', tx });
        return out;
      } catch (e) {
        await send({ op: 'rollback', tx }).catch(() => undefined);
        throw e;
      }
    },
    async ping() {
      await base.query('SELECT 1');
    },
    async close() {
      await send({ op: 'close' }).catch(() => undefined);
      await worker.terminate();
    },
  };
}

let compiling: Promise<WebAssembly.Module | undefined> | undefined;
/**
 * PGlite's WebAssembly, compiled once per process and handed to every worker (a compiled module crosses to a
 * worker thread without being compiled again): the embedded gateway opens one database per service, and each
 * would otherwise compile the same 10 MB module. Should the file not be where this PGlite keeps it, each worker
 * compiles its own, as PGlite does by default.
 */
function pgliteModule(): Promise<WebAssembly.Module | undefined> {
  compiling ??= (async () => {
    try {
      const file = path.join(path.dirname(require.resolve('@electric-sql/pglite')), 'pglite.wasm');
      return await WebAssembly.compile(await fs.readFile(file));
    } catch {
      return undefined;
    }
  })();
  return compiling;
}
