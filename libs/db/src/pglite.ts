import { existsSync, readFileSync } from 'node:fs';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Db, Queryable, Row } from './db';
import { PgliteThread, sharedPgliteThread } from './pglite-thread';
import { SCHEMA_NAME } from './schema-name';

/**
 * One PGlite that several services share, each in a schema of its own, as the fleet's services share one
 * PostgreSQL server: one WebAssembly heap (about 15 MiB resident idle with 4 MB of shared buffers) instead of one
 * per service. PGlite has a single session, so a transaction holds it for every schema: a service must never
 * wait, inside its transaction, on another schema of the same host (it would wait forever).
 */
export interface PgliteHost {
  /** The database as one service sees it: its own schema (created if missing) first on the search path. */
  schema(name: string): Promise<Db>;
}

/**
 * Embedded PostgreSQL on the process's PGlite thread (pglite-thread.ts). `dir` undefined keeps it in memory
 * (tests). The database shuts down when the last schema opened on it is closed.
 */
export async function openPgliteHost(dir?: string, seed?: PgliteSeed): Promise<PgliteHost> {
  const conn = await connection(dir, seed);
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
export async function openPglite(dir?: string, seed?: PgliteSeed): Promise<Db> {
  return (await connection(dir, seed)).view(undefined);
}

/**
 * What a new data directory starts as, beyond an empty cluster: the tables its services' migrations create, made
 * once into a cluster kept beside the pristine one and copied like it, so a first start runs no migration (about a
 * second of the PGlite thread's core for the embedded gateway's two). The migrations still run at every start and
 * find everything applied; a seed only saves doing it again on every new directory.
 */
export interface PgliteSeed {
  /** Which database this is the seed of ("billing", "services"): the cache keeps the newest seed of each name. */
  name: string;
  /** A digest (hex) of everything `fill` depends on (the migrations' ids and SQL): another key makes another seed. */
  key: string;
  /** Creates the tables on a new cluster, through `db` (the default schema, or a named one it creates). */
  fill(db: (schema?: string) => Promise<Db>): Promise<void>;
}

const early = new Map<string, ReturnType<typeof connect>>();
/**
 * Starts the PGlite on `dir` now, for the openPglite or openPgliteHost of that directory to come (the embedded
 * gateway's main starts its databases before the rest of its code loads). A failure surfaces there.
 */
export function prestartPglite(dir: string, seed?: PgliteSeed): void {
  const key = path.resolve(dir);
  if (early.has(key)) return;
  const started = connect(key, seed);
  started.catch(() => undefined);
  early.set(key, started);
}

/** The PGlite prestarted on `dir`, taken once, or a new one. */
function connection(dir: string | undefined, seed: PgliteSeed | undefined): ReturnType<typeof connect> {
  const key = dir && path.resolve(dir);
  const started = key ? early.get(key) : undefined;
  if (!key || !started) return connect(dir, seed);
  early.delete(key);
  return started;
}

/**
 * A new cluster made by initdb in `dir`, in a thread of its own that ends with it: initdb grows PGlite's heap by
 * several hundred MiB that WebAssembly never gives back.
 */
async function initCluster(dir: string): Promise<void> {
  const worker = new Worker(path.join(__dirname, 'pglite-worker.js'), { workerData: { dir, initOnly: true, wasmModule: pgliteModule() } });
  try {
    await new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('message', (m: { ready: boolean; error?: string }) =>
        m.ready ? resolve() : reject(new Error(`PGlite failed to start: ${m.error}`)),
      );
    });
  } finally {
    await worker.terminate();
  }
}

/**
 * The database of `dir` opened on `thread` (the process's own unless given). A new data directory is a copy of its
 * seed or of the pristine cluster, made by the thread that then serves it; initdb only when there is neither.
 * Clusters already in the cache are found without an await, so the open is posted (or the thread spawned) at once.
 */
function startDb(dir: string | undefined, seed: PgliteSeed | undefined, copyFrom: string | undefined, thread?: PgliteThread) {
  const on = (from: string | undefined) => {
    const t = thread ?? sharedPgliteThread(pgliteModule);
    const { db, ready } = t.open(dir, from);
    return ready.then(() => ({ thread: t, db }));
  };
  if (!dir || copyFrom || existsSync(path.join(dir, 'PG_VERSION'))) return on(copyFrom);
  // A seed not yet made is made now (once per set of migrations), rather than copying the pristine cluster.
  const cached = seed ? cachedCluster(seedPath(seed)) : cachedCluster(pristinePath());
  if (cached) return on(cached);
  return (async () => {
    const from = (seed && (await seededCluster(seed).catch(() => undefined))) || (await pristineCluster().catch(() => undefined));
    if (!from) await initCluster(dir);
    return on(from);
  })();
}

async function connect(dir: string | undefined, seed?: PgliteSeed, copyFrom?: string, ownThread?: PgliteThread) {
  const { thread, db } = await startDb(dir, seed, copyFrom, ownThread);
  // Unique across the schemas: the worker tells one transaction's statements from everyone else's by this number.
  let nextTx = 1;
  let open = 0;
  let ended = false;

  function view(schema: string | undefined): Db {
    if (ended) throw new Error('this PGlite was closed with the last database on it');
    open++;
    let closed = false;
    const post = <T>(msg: Record<string, unknown>): Promise<T> => {
      if (closed) return Promise.reject(new Error('the database is closed'));
      msg.schema = schema;
      return thread.send<T>(db, msg);
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
        await thread.close(db).catch(() => undefined);
      },
    };
  }
  /** Closes the database once PGlite has shut down cleanly and every file of its directory has been synced. */
  async function closeSynced(): Promise<void> {
    ended = true;
    await thread.close(db, { syncTree: true });
  }
  return { view, closeSynced };
}

let compiled: { module: WebAssembly.Module | undefined } | undefined;
/**
 * PGlite's WebAssembly, compiled once per process and handed to every worker (a compiled module crosses to a
 * worker thread without being compiled again, and its code is shared). Compiled synchronously (about 90 ms): the
 * prestarted databases need it before the gateway's modules have loaded, when no promise could settle. Should the
 * file not be where this PGlite keeps it, each worker compiles its own, as PGlite does by default.
 */
function pgliteModule(): WebAssembly.Module | undefined {
  compiled ??= (() => {
    try {
      const file = path.join(path.dirname(require.resolve('@electric-sql/pglite')), 'pglite.wasm');
      return { module: new WebAssembly.Module(readFileSync(file)) };
    } catch {
      return { module: undefined };
    }
  })();
  return compiled.module;
}

/** pglite-worker.js's mark: written once every file of the data directory has been synced. */
const SYNCED_MARK = 'gateway-synced';

let cacheInfo: { dir: string; version: string } | null | undefined;
/** The cache of pristine and seeded clusters, and the installed PGlite's version; null when it has no place. */
function clusterCache(): { dir: string; version: string } | null {
  cacheInfo ??= findClusterCache();
  return cacheInfo;
}

/**
 * Beside the installed PGlite, under node_modules/.cache, unless GATEWAY_PGLITE_CACHE says where. null when PGlite's
 * own files cannot be read: a new directory then runs initdb, as without a cache, rather than fail the start.
 */
function findClusterCache(): { dir: string; version: string } | null {
  try {
    const entry = require.resolve('@electric-sql/pglite');
    const marker = `${path.sep}node_modules${path.sep}`;
    const at = entry.indexOf(marker);
    if (at < 0) return null;
    const pkg = JSON.parse(readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
    const dir = process.env.GATEWAY_PGLITE_CACHE ?? path.join(entry.slice(0, at + marker.length), '.cache', 'gateway-pglite');
    return { dir, version: pkg.version };
  } catch {
    return null;
  }
}

/** Where the pristine cluster of the installed PGlite is kept (whether made yet or not). */
function pristinePath(): string | undefined {
  const cache = clusterCache();
  return cache ? path.join(cache.dir, `pglite-${cache.version}-${PRISTINE_FORMAT}`) : undefined;
}

/** Where the seeds of `name` are kept: beside the pristine cluster, each under this prefix and its key. */
function seedPrefix(name: string): string | undefined {
  const base = pristinePath();
  return base && `${base}-seed-${name}-`;
}

/** Where `seed`'s cluster is kept. */
function seedPath(seed: PgliteSeed): string | undefined {
  const prefix = seedPrefix(seed.name);
  return prefix && `${prefix}${seed.key.slice(0, 16)}`;
}

/** `dir` when a whole cluster is there (its synced mark is written last). */
const cachedCluster = (dir: string | undefined) => (dir && existsSync(path.join(dir, SYNCED_MARK)) ? dir : undefined);

/**
 * Makes a cluster under the cache's temporary name with `make`, then renames it to `final`: a cluster found under
 * its final name is whole. Two processes making it at once both succeed and one rename wins.
 */
async function madeOnce(cache: string, final: string, make: (tmp: string) => Promise<void>): Promise<string> {
  const tmp = path.join(cache, `.making-${process.pid}-${crypto.randomBytes(4).toString('hex')}`);
  try {
    await fs.mkdir(cache, { recursive: true });
    await make(tmp);
    await fs.rename(tmp, final).catch(async (e) => {
      if (!existsSync(path.join(final, SYNCED_MARK))) throw e;
    });
    return final;
  } finally {
    await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
  }
}

const seeds = new Map<string, Promise<string | undefined>>();
/**
 * The seeded cluster of `seed`: the pristine cluster copied, started, filled (its migrations), shut down cleanly and
 * synced, kept in the cache under its name and a hash of its key. Older seeds of the same name (migrations since
 * added) are removed once the new one is in place. undefined when there is no pristine cluster to start from.
 */
export function seededCluster(seed: PgliteSeed): Promise<string | undefined> {
  const id = `${seed.name}\n${seed.key}`;
  let made = seeds.get(id);
  if (!made) {
    made = (async () => {
      const cache = clusterCache();
      const final = seedPath(seed);
      const base = await pristineCluster();
      if (!cache || !final || !base) return undefined;
      if (cachedCluster(final)) return final;
      await madeOnce(cache.dir, final, async (tmp) => {
        // On a thread of its own, which ends with it: what making a seed leaves in memory goes with that thread.
        const conn = await connect(tmp, undefined, base, new PgliteThread(pgliteModule()));
        try {
          await seed.fill(async (schema) => {
            if (schema && !SCHEMA_NAME.test(schema)) throw new Error(`bad schema name ${schema}`);
            const db = conn.view(schema);
            if (schema) await db.exec(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
            return db;
          });
        } finally {
          await conn.closeSynced();
        }
      });
      await removeStaleSeeds(final, seedPrefix(seed.name) as string);
      return final;
    })();
    seeds.set(id, made);
  }
  return made;
}

/**
 * Seeds of the same name that other migrations made, once an hour old: a gateway of the older code may still be
 * copying one (a checkout running while its migrations are edited), and none is needed again by this code.
 */
async function removeStaleSeeds(keep: string, prefix: string): Promise<void> {
  const cache = path.dirname(prefix);
  for (const name of await fs.readdir(cache)) {
    const dir = path.join(cache, name);
    if (!dir.startsWith(prefix) || dir === keep) continue;
    const { mtimeMs } = await fs.stat(dir).catch(() => ({ mtimeMs: Date.now() }));
    if (Date.now() - mtimeMs > STALE_SEED_MS) await fs.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}
const STALE_SEED_MS = 3_600_000;

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
    const cache = clusterCache();
    const final = pristinePath();
    if (!cache || !final) return undefined;
    if (cachedCluster(final)) return final;
    return madeOnce(cache.dir, final, async (tmp) => {
      await initCluster(tmp);
    }).catch(() => undefined);
  })();
  return pristine;
}
/** Raised when what initdb is asked for changes (its arguments, the database the tables live in). */
const PRISTINE_FORMAT = 1;
