/**
 * `pnpm bench ledger`: what the embedded gateway's write-behind costs per request. Each billed request leaves two
 * records (its hold's place and close), which ledger_write writes behind the in-memory ledger, in PGlite's worker
 * thread. Under load that thread competes with the request thread for the machine's two cores, so its cost per
 * request is a cost of every request. This writes batches of BENCH_LEDGER_BATCHES (default 100,250,1000)
 * place+close pairs, as the write-behind folds them, into a fresh on-disk PGlite with billing's migrations, and
 * reports the time per batch and per request (median of BENCH_LEDGER_ROUNDS rounds, default 3, each of 30 batches
 * after 5 of warm-up) and the write-ahead log it writes per request.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openServiceDb } from '@gateway/db';
import { type LedgerRecord, writeBatch, holdFacts, payer, usageRecord } from '@gateway/billing/testing';
import { migrations } from '@gateway/billing';

const SIZES = (process.env.BENCH_LEDGER_BATCHES ?? '100,250,1000').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_LEDGER_ROUNDS ?? 3);
const WARMUP = 5;
const BATCHES = 30;

interface Figure {
  size: number;
  msPerBatch: number;
  usPerRequest: number;
  walBytesPerRequest: number;
}

async function measure(size: number): Promise<Figure> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-bench-ledger-'));
  const db = await openServiceDb('billing', migrations, { dataDir: dir });
  try {
    const who = await payer(db, '1000000');
    const walBytes = async () => Number((await db.query<{ b: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS b`))[0].b);
    let seq = Number((await db.query<{ s: string }>('SELECT applied_seq::text AS s FROM ledger_journal'))[0].s);
    let n = 0;
    const batch = async () => {
      const from = seq;
      const records: LedgerRecord[] = [];
      for (let i = 0; i < size; i++) {
        n++;
        const h = holdFacts(who, `bench_${n}`, 5_000_000n);
        records.push({ seq: ++seq, t: 'place', h, idem: null, expires_ms: Date.now() + 60_000 });
        records.push({ seq: ++seq, t: 'close', h, state: 'settled', charge: '1234', late: false, rec: usageRecord });
      }
      await writeBatch(db, from, records);
    };
    for (let i = 0; i < WARMUP; i++) await batch();
    const wal0 = await walBytes();
    const started = performance.now();
    for (let i = 0; i < BATCHES; i++) await batch();
    const ms = performance.now() - started;
    const wal = (await walBytes()) - wal0;
    return { size, msPerBatch: ms / BATCHES, usPerRequest: (ms * 1000) / (BATCHES * size), walBytesPerRequest: wal / (BATCHES * size) };
  } finally {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchLedgerWrite(): Promise<string> {
  const rows: Figure[] = [];
  for (const size of SIZES) {
    const rounds: Figure[] = [];
    // Each round on a fresh database, so no round inherits another's tables or write-ahead log.
    for (let r = 0; r < ROUNDS; r++) {
      const f = await measure(size);
      process.stderr.write(`[bench] ledger_write, batches of ${size}: ${f.usPerRequest.toFixed(1)} µs per request\n`);
      rounds.push(f);
    }
    rows.push(rounds.sort((a, b) => a.usPerRequest - b.usPerRequest)[Math.floor(rounds.length / 2)]);
  }
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
  return [
    `\nledger_write on PGlite on disk, ${machine}; median of ${ROUNDS} rounds of ${BATCHES} batches`,
    '',
    '| requests per batch | ms per batch | µs per request | WAL bytes per request |',
    '|---|---|---|---|',
    ...rows.map((f) => `| ${f.size} | ${f.msPerBatch.toFixed(1)} | ${f.usPerRequest.toFixed(1)} | ${Math.round(f.walBytesPerRequest)} |`),
    '',
  ].join('\n');
}
