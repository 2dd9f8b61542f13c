// PGlite runs its WebAssembly synchronously. In this worker thread it uses the second core and never blocks the
// event loop that serves HTTP. Plain CommonJS on purpose: a worker starts outside any TypeScript loader.
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { PGlite } = require('@electric-sql/pglite');

(async () => {
  if (workerData.dir) fs.mkdirSync(workerData.dir, { recursive: true });
  const pg = new PGlite(workerData.dir || undefined, {
    relaxedDurability: true,
    ...(workerData.wasmModule ? { wasmModule: workerData.wasmModule } : {}),
  });
  await pg.waitReady;
  // Transactions hold the connection: other statements wait until the one that owns it commits.
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
        await pg.close();
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

  let chain = Promise.resolve();
  parentPort.on('message', (msg) => {
    chain = chain.then(() => handle(msg));
  });
  parentPort.postMessage({ ready: true });
})().catch((e) => parentPort.postMessage({ ready: false, error: e.message }));
