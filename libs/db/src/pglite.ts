import { existsSync } from 'node:fs';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Db, Queryable, Row } from './db';
import { SCHEMA_NAME } from './schema-name';

/** What pglite-worker.js posts back for each request. */
type WorkerReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { message: string; code?: string; constraint?: string } };

/**
 * One PGlite that several services share, each in a schema of its own, as the fleet's services share one
 * PostgreSQL server: one WebAssembly heap (about 150 MiB with 16 MB of shared buffers, 250-320 MiB before; whatever the data) and one worker thread instead of
 * one per service. PGlite has a single session, so a transaction holds it for every schema: a service must never
 * wait, inside its transaction, on another schema of the same host (it would wait forever).
 */
export interface PgliteHost {
  /** The database as one service sees it: its own schema (created if missing) first on the search path. */
  schema(name: string): Promise<Db>;
}

/**
 * Embedded PostgreSQL in a worker thread (see pglite-worker.js): the WebAssembly database gets its own core and
 * the HTTP event loop stays free. `dir` undefined keeps it in memory (tests). The worker ends when the last schema
 * opened on it is closed.
 */
export async function openPgliteHost(dir?: string): Promise<PgliteHost> {
  const conn = await connection(dir);
  return {
    async schema(name) {
      if (!SCHEMA_NAME.test(name)) throw new Error(`bad schema name ${name}`);
      const db = conn.view(name);
      await db.exec(`CREATE SCHEMA IF NOT EXISTS "${name}"`);
      return db;
    },
  };
}

/** A PGlite of one's own, its tables in the default schema. */
export async function openPglite(dir?: string): Promise<Db> {
  return (await connection(dir)).view(undefined);
}

const early = new Map<string, ReturnType<typeof connect>>();
/**
 * Starts the PGlite on `dir` now, for the openPglite or openPgliteHost of that directory to come (the embedded
 * gateway's main starts its databases before the rest of its code loads). A failure surfaces there.
 */
export function prestartPglite(dir: string): void {
  const key = path.resolve(dir);
  if (early.has(key)) return;
  const started = connect(key);
  started.catch(() => undefined);
  early.set(key, started);
}

/** The PGlite prestarted on `dir`, taken once, or a new one. */
function connection(dir: string | undefined): ReturnType<typeof connect> {
  const key = dir && path.resolve(dir);
  const started = key ? early.get(key) : undefined;
  if (!key || !started) return connect(dir);
  early.delete(key);
  return started;
}

/**
 * A PGlite worker thread, once its database has started (or, `initOnly`, once it has made and closed one). With
 * `copyFrom`, the thread first copies that pristine cluster into `dir` (pglite-worker.js, copyCluster).
 */
async function startWorker(dir: string | undefined, initOnly = false, copyFrom?: string): Promise<Worker> {
  const worker = new Worker(path.join(__dirname, 'pglite-worker.js'), {
    workerData: { dir, initOnly, wasmModule: await pgliteModule(), copyFrom },
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('error', reject);
    worker.once('message', (m: { ready: boolean; error?: string }) =>
      m.ready ? resolve() : reject(new Error(`PGlite failed to start: ${m.error}`)),
    );
  });
  return worker;
}

async function connect(dir: string | undefined) {
  // A new data directory is a copy of the pristine cluster, made by the thread that then serves it; initdb only when
  // there is none, in a thread of its own: it grows the heap by several hundred MiB never given back.
  let copyFrom: string | undefined;
  if (dir && !existsSync(path.join(dir, 'PG_VERSION'))) {
    copyFrom = await pristineCluster().catch(() => undefined);
    if (!copyFrom) await (await startWorker(dir, true)).terminate();
  }
  const worker = await startWorker(dir, false, copyFrom);
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  let nextId = 1;
  // Unique across the schemas: the worker tells one transaction's statements from everyone else's by this number.
  let nextTx = 1;
  let open = 0;
  let ended = false;
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

  /** `msg` is the caller's own fresh object: it gets its id in place. */
  const send = <T>(msg: Record<string, unknown>): Promise<T> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      // The worker's answer is untyped: T is what the caller's SQL selects.
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      msg.id = id;
      worker.postMessage(msg);
    });

  function view(schema: string | undefined): Db {
    if (ended) throw new Error('this PGlite was closed with the last database on it');
    open++;
    let closed = false;
    const post = <T>(msg: Record<string, unknown>): Promise<T> => {
      if (closed) return Promise.reject(new Error('the database is closed'));
      msg.schema = schema;
      return send<T>(msg);
    };
    const on = (tx?: number): Queryable => ({
      query: <T extends Row>(sql: string, params?: unknown[]) =>
        post<T[]>({ op: 'query', sql, params: params?.map((p) => (typeof p === 'bigint' ? p.toString() : p)), tx }),
      exec: (sql: string) => post<void>({ op: 'exec', sql, tx }),
    });
    const base = on();
    return {
      kind: 'pglite',
      query: base.query,
      exec: base.exec,
      async transaction(fn) {
        const tx = nextTx++;
        await post({ op: 'begin', tx });
        try {
          const out = await fn(on(tx));
          await post({ op: 'commit', tx });
          return out;
        } catch (e) {
          await post({ op: 'rollback', tx }).catch(() => undefined);
          throw e;
        }
      },
      async ping() {
        await base.query('SELECT 1');
      },
      async close() {
        if (closed) return;
        closed = true;
        if (--open > 0) return;
        ended = true;
        await send({ op: 'close' }).catch(() => undefined);
        await worker.terminate();
      },
    };
  }
  return { view };
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

/** pglite-worker.js's mark: written once every file of the data directory has been synced. */
const SYNCED_MARK = 'gateway-synced';

let pristine: Promise<string | undefined> | undefined;
/**
 * The pristine cluster of the installed PGlite: made once, by initdb in a worker of its own (whose heap growth ends
 * with it), under node_modules/.cache beside that PGlite, and named by its version: another PGlite (an upgrade, a
 * downgrade) makes its own. Made under a temporary name, synced, then renamed, so a cluster found under the final
 * name is whole; two processes making it at once both succeed and one rename wins. undefined when the cache
 * cannot be written (a read-only installation): each new data directory then runs initdb itself.
 */
export function pristineCluster(): Promise<string | undefined> {
  pristine ??= (async () => {
    const entry = require.resolve('@electric-sql/pglite');
    const marker = `${path.sep}node_modules${path.sep}`;
    const at = entry.indexOf(marker);
    if (at < 0) return undefined;
    const pkg = JSON.parse(await fs.readFile(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
    const cache = process.env.GATEWAY_PGLITE_CACHE ?? path.join(entry.slice(0, at + marker.length), '.cache', 'gateway-pglite');
    const final = path.join(cache, `pglite-${pkg.version}-${PRISTINE_FORMAT}`);
    if (existsSync(path.join(final, SYNCED_MARK))) return final;
    const tmp = path.join(cache, `.making-${process.pid}-${crypto.randomBytes(4).toString('hex')}`);
    try {
      await fs.mkdir(cache, { recursive: true });
      await (await startWorker(tmp, true)).terminate();
      await fs.rename(tmp, final).catch(async (e) => {
        if (!existsSync(path.join(final, SYNCED_MARK))) throw e;
      });
      return final;
    } catch {
      return undefined;
    } finally {
      await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    }
  })();
  return pristine;
}
/** Raised when what initdb is asked for changes (its arguments, the database the tables live in). */
const PRISTINE_FORMAT = 1;
