// PGlite runs its WebAssembly synchronously. In this worker thread it uses the second core and never blocks the
// event loop that serves HTTP. Plain CommonJS on purpose: a worker starts outside any TypeScript loader.
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');

/** Written, and synced, once every file of the data directory has been: see openDurable. */
const SYNCED_MARK = 'gateway-synced';

/**
 * The files and directories under `root`, relative to it, each directory after everything in it (deepest first).
 * A file named `skip` at the top is left out.
 */
function listTree(root, skip) {
  const files = [];
  const dirs = [];
  (function walk(rel) {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = path.join(rel, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile() && !(rel === '' && entry.name === skip)) files.push(child);
    }
    dirs.push(rel);
  })('');
  return { files, dirs };
}

/**
 * Every file and directory under `dir` synced, each directory after everything in it. The fsyncs run on libuv's
 * thread pool, SYNC_PARALLEL at a time: a new cluster is about 1,000 files, and one after the other each waits for
 * its own journal commit (on ext4 several hundred ms for the lot), while the file system folds concurrent ones into
 * fewer commits. Each file still gets its own fsync, with its own error: nothing is marked synced unless all were.
 */
async function syncTree(dir) {
  const { files, dirs } = listTree(dir);
  await inParallel(files, (rel) => syncPathAsync(path.join(dir, rel)));
  await inParallel(dirs, (rel) => syncPathAsync(path.join(dir, rel)));
}
const SYNC_PARALLEL = 16;

async function inParallel(items, fn) {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(SYNC_PARALLEL, items.length) }, lane));
}

async function syncPathAsync(file) {
  const handle = await fs.promises.open(file, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * A new data directory made from the pristine cluster (pglite.ts, pristineCluster), which was shut down cleanly and
 * so is whole in its files: each file is copied and fsynced, then each directory deepest first, and only then is
 * the synced mark written, so openDurable finds a cluster as durable as one it checkpointed and synced itself.
 * A thread's first one starts before PGlite is required: its copies and fsyncs run on the thread pool meanwhile.
 */
async function copyCluster(from, to) {
  const { files, dirs } = listTree(from, SYNCED_MARK);
  // Parents before their children: the listing has each directory after everything in it.
  for (const rel of [...dirs].reverse()) fs.mkdirSync(path.join(to, rel), { recursive: true });
  await inParallel(files, async (rel) => {
    await fs.promises.copyFile(path.join(from, rel), path.join(to, rel));
    await syncPathAsync(path.join(to, rel));
  });
  await inParallel(dirs, (rel) => syncPathAsync(path.join(to, rel)));
  await markSynced(to, `copied from ${from}`);
}

/** The synced mark written and synced, then its directory: the last step of making a data directory durable. */
async function markSynced(dir, how) {
  const mark = path.join(dir, SYNCED_MARK);
  await fs.promises.writeFile(mark, `${new Date().toISOString()}${how ? ` ${how}` : ''}\n`);
  await syncPathAsync(mark);
  await syncPathAsync(dir);
}
// The first database's copy runs on the thread pool while this thread loads PGlite (about half a second).
const first = workerData.first;
const firstCopy = first?.copyFrom ? copyCluster(first.copyFrom, first.dir) : undefined;
firstCopy?.catch(() => undefined); // awaited before that database opens, where its failure is reported

const { PGlite } = require('@electric-sql/pglite');
const { NodeFS } = require('@electric-sql/pglite/nodefs');

/** EIO, as Emscripten numbers it: a failed sync reaches PostgreSQL as the error it is, and it stops (data_sync_retry). */
const EIO = 29;
const EBADF = 8;

/**
 * PGlite's file system on Node with the one thing it lacks: a real sync. PostgreSQL syncs the WAL at every commit
 * and the data files at every checkpoint, but Emscripten's NODEFS has no fsync and its fdatasync is a stub, so every
 * sync returned 0 and nothing reached the disk until the kernel chose to write it: a power cut could lose
 * acknowledged commits, or leave a cluster that no longer starts (test-e2e/reliability/power-cut.e2e.ts).
 * PGlite ignores postgresql.conf, so `wal_sync_method` stays fdatasync: its stub is replaced in the WebAssembly's
 * imports, before the module is instantiated, and both calls end in fs.fsyncSync.
 */
class DurableNodeFS extends NodeFS {
  async init(pg, opts) {
    const { emscriptenOpts } = await super.init(pg, opts);
    let mod;
    const sync = (stream) => {
      try {
        if (stream.nfd !== undefined) fs.fsyncSync(stream.nfd);
        else syncPath(mod.FS.filesystems.NODEFS.realPath(stream.node)); // a directory, after an entry in it changed
      } catch (e) {
        if (e && e.name === 'ErrnoError') throw e;
        throw new mod.FS.ErrnoError(EIO);
      }
      return 0;
    };
    const instantiate = emscriptenOpts.instantiateWasm;
    if (!instantiate) throw new Error('PGlite no longer instantiates through instantiateWasm: its fdatasync cannot be made real');
    return {
      emscriptenOpts: {
        ...emscriptenOpts,
        preRun: [
          ...(emscriptenOpts.preRun || []),
          (m) => {
            mod = m;
            m.FS.filesystems.NODEFS.stream_ops.fsync = sync;
          },
        ],
        instantiateWasm(imports, done) {
          if (typeof imports.env?.__syscall_fdatasync !== 'function')
            throw new Error("PGlite's WebAssembly imports no __syscall_fdatasync to make real");
          imports.env.__syscall_fdatasync = (fd) => {
            const stream = mod.FS.getStream(fd);
            if (!stream) return -EBADF;
            try {
              return stream.stream_ops.fsync ? stream.stream_ops.fsync(stream) : 0;
            } catch (e) {
              return -(e.errno ?? EIO);
            }
          };
          return instantiate(imports, done);
        },
      },
    };
  }
}

function syncPath(file) {
  const fd = fs.openSync(file, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * PostgreSQL's command line as PGlite builds it, but durable and small. PGlite starts the backend with `-F` (fsync
 * off): no commit would ever reach the disk through our real sync, so it goes. And `shared_buffers` comes down from
 * 128 MB to 4 MB: PostgreSQL touches every page of its buffer pool when it starts, so each PGlite's WebAssembly heap
 * (never given back) holds the whole pool resident from the first second, idle or not: about 11 MiB plus the pool.
 * 16 MB was not measurably faster: the gateway's tables are appends and lookups by random ids, whose indexes
 * outgrow any pool of this size within minutes of load, and a miss is a read from the kernel's page cache, not the
 * disk (docs/benchmarks.md, 2026-11-29 01:50-02:50).
 */
function startParams() {
  return [...PGlite.defaultStartParams.filter((p) => p !== '-F'), '-c', `shared_buffers=${SHARED_BUFFERS}`];
}
const SHARED_BUFFERS = '4MB';

/**
 * The database on `dir` with real syncs. A new cluster's files (initdb writes its catalogues directly, not through
 * the WAL) and one written by a version without real syncs are synced once, file by file, then marked; from then
 * on PostgreSQL's own syncs keep it durable.
 */
async function openDurable(dir) {
  const options = {
    relaxedDurability: true,
    startParams: startParams(),
    // PGlite 0.3 kept its tables in template1 and 0.4 in postgres: every data directory the gateway ever made has
    // them in template1, so that is where they stay (pglite-upgrade.pglite.test.ts).
    database: 'template1',
    ...(workerData.wasmModule ? { wasmModule: workerData.wasmModule } : {}),
  };
  if (!dir) return PGlite.create(options);
  fs.mkdirSync(dir, { recursive: true });
  const pg = await PGlite.create({ ...options, fs: new DurableNodeFS(dir) });
  const [{ fsync }] = (await pg.query("SELECT current_setting('fsync') AS fsync")).rows;
  if (fsync !== 'on') throw new Error(`PGlite started with fsync ${fsync}: its commits would not survive a power cut`);
  const mark = path.join(dir, SYNCED_MARK);
  if (!fs.existsSync(mark)) {
    await pg.exec('CHECKPOINT');
    await syncTree(dir);
    await markSynced(dir);
  }
  return pg;
}

if (workerData.initOnly) {
  // A new cluster by initdb, then nothing: the heap it grew ends with this thread (pglite.ts, pristineCluster).
  openDurable(workerData.dir)
    .then((pg) => pg.close())
    .then(
      () => parentPort.postMessage({ ready: true }),
      (e) => parentPort.postMessage({ ready: false, error: e.message }),
    );
} else {
  // Every PGlite of the process lives on this one thread (pglite.ts, PgliteThread): each is opened by an `open`
  // message and named by its number in every message after. Each has its own queue, so one database's transaction,
  // waiting on the main thread, never holds up another's statements.
  const databases = new Map();
  if (first) open(first, firstCopy);
  parentPort.on('message', (msg) => {
    if (msg.op === 'open') return void open(msg);
    const db = databases.get(msg.db);
    if (!db) return void parentPort.postMessage({ id: msg.id, ok: false, error: { message: `no database ${msg.db} on this thread` } });
    db.chain = db.chain.then(() => db.handle(msg));
  });

  async function open({ db, dir, copyFrom }, copying = copyFrom && copyCluster(copyFrom, dir)) {
    try {
      await copying;
      databases.set(
        db,
        serve(await openDurable(dir), dir, () => databases.delete(db)),
      );
      parentPort.postMessage({ opened: db });
    } catch (e) {
      parentPort.postMessage({ opened: db, error: e.message });
    }
  }
}

/** One database's statements, in order: transactions hold its session, others' statements wait for their end. */
function serve(pg, dir, onClosed) {
  let tx = null;
  const waiting = [];
  const serialize = (rows) => JSON.parse(JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));

  // Several services may share this one session, each in its own schema (pglite.ts checks the names): a message
  // carries its schema, and the session's search_path follows it, as each fleet service's pool sets its own.
  // Set outside transactions only, so a rollback never takes the setting back with it.
  let searchPath = null;
  async function useSchema(schema) {
    const wanted = schema || null;
    if (wanted === searchPath) return;
    await pg.exec(wanted ? `SET search_path TO "${wanted}", public` : 'RESET search_path');
    searchPath = wanted;
  }

  async function run(msg) {
    const inTx = tx && tx.id === msg.tx;
    if (!inTx && msg.op !== 'close') await useSchema(msg.schema);
    const conn = inTx ? tx.conn : pg;
    switch (msg.op) {
      case 'query':
        return serialize((await conn.query(msg.sql, msg.params)).rows);
      case 'exec':
        await conn.exec(msg.sql);
        return null;
      case 'begin':
        await pg.exec('BEGIN');
        tx = { id: msg.tx, conn: pg };
        return null;
      case 'commit':
      case 'rollback':
        try {
          await pg.exec(msg.op === 'commit' ? 'COMMIT' : 'ROLLBACK');
        } finally {
          tx = null;
        }
        return null;
      case 'close':
        onClosed();
        await pg.close();
        // A seed (pglite.ts, seededCluster) is kept only once every file its shutdown left has reached the disk.
        if (msg.syncTree) await syncTree(dir);
        return null;
    }
    throw new Error(`unknown op ${msg.op}`);
  }

  async function handle(msg) {
    if (tx && msg.tx !== tx.id) return void waiting.push(msg);
    try {
      parentPort.postMessage({ id: msg.id, ok: true, result: await run(msg) });
    } catch (e) {
      parentPort.postMessage({ id: msg.id, ok: false, error: { message: e.message, code: e.code, constraint: e.constraint } });
    }
    while (!tx && waiting.length) await handle(waiting.shift());
  }
  return { chain: Promise.resolve(), handle };
}
