import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Db } from '@gateway/db';
import { openTestDb, type TestDb } from '@gateway/db/testing';
import { createMetrics, type Metrics } from '@gateway/service-kit';
import { migrations } from '../../migrations';
import { inMemoryView } from '../../testing/ledger-db';
import { expectLedgerInvariants, figures, holdRow } from '../../testing/ledger-figures';
import { closeEvent, holdFacts, payer, placeHold, usageRecord } from '../../testing/ledger-fixtures';
import { recordingLogger } from '../../testing/recording-logger';
import { readJournal } from './journal';
import { MemoryLedger } from './memory-ledger';
import type { LedgerRecord } from './records';

/**
 * Issue 31, item 2: a journal record the tables can never take must not stop the embedded ledger. Over about 2.7 KB,
 * an Idempotency-Key fails the open-hold unique index with SQLSTATE 54000 (program limit exceeded); the routes refuse
 * such a key now, so these tests hand it to the ledger below that check, as any other such record would arrive.
 * Before the fix the write-behind retried it for ever (flushed() never resolved: readers, the sweeper, admin writes
 * and a stop all waited) and a start replaying it failed.
 */
// Random, so that PostgreSQL cannot compress it below the limit (a repeated letter would fit).
const HUGE_KEY = crypto.randomBytes(1536).toString('hex');

/** Fails the test with `what` instead of hanging it, when the ledger is wedged. */
function unwedged<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const wedged = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the ledger is wedged: ${what} never resolved`)), 20_000);
  });
  return Promise.race([p, wedged]).finally(() => clearTimeout(timer));
}

const turn = () => new Promise((r) => setImmediate(r));

interface DeadLetterRow {
  seq: string;
  kind: string;
  hold_id: string;
  account_id: string;
  error_code: string | null;
  depends_on: string | null;
  reloaded: boolean;
  record: string;
}

const deadLetters = (db: Db) =>
  db.query<DeadLetterRow & Record<string, unknown>>(
    `SELECT seq::text AS seq, kind, hold_id, account_id, error_code, depends_on::text AS depends_on, reloaded_at IS NOT NULL AS reloaded, record
       FROM ledger_dead_letters ORDER BY seq`,
  );
const applied = async (db: Db) => Number((await db.query<{ s: string }>('SELECT applied_seq::text AS s FROM ledger_journal'))[0].s);
const counted = async (metrics: Metrics) =>
  Object.fromEntries(
    ((await metrics.registry.getSingleMetric('gateway_ledger_dead_letters_total')?.get())?.values ?? []).map((v) => [
      `${v.labels.reason}/${v.labels.store}`,
      v.value,
    ]),
  );

describe('the in-memory ledger and a record the tables can never take', () => {
  let t: TestDb;
  let dir: string;
  let metrics: Metrics;
  let log: ReturnType<typeof recordingLogger>;
  beforeEach(async () => {
    t = await openTestDb('pglite', 'billing', migrations);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-dead-'));
    metrics = createMetrics();
    log = recordingLogger();
  }, 60_000);
  afterEach(async () => {
    await expectLedgerInvariants(t.db);
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const open = (db: Db = t.db) => MemoryLedger.open({ db, logger: log.logger, journalDir: dir, metrics, sweepIntervalMs: 60_000 });

  it('dead-letters it and the later records of its hold, applies every other, and keeps going', async () => {
    const m = await open();
    const view = inMemoryView(t.db, m);
    const a = await payer(view, '1');
    const b = await payer(view, '1');
    const bad = await placeHold(m, a, '0.3', { idempotencyKey: HUGE_KEY });
    const good = await placeHold(m, b, '0.3');
    // Both holds go out open in one batch, at once. Queued behind it while it is written: a checkpoint of the first
    // (its stream still running, so its hold stays open in every later batch) and the second's settle.
    const flushing = m.flushed();
    await turn();
    const later = [
      m.checkpointHold({ ...closeEvent(bad, a, 'settle', '0.05'), outcome: 'settle' }),
      m.closeHold(closeEvent(good, b, 'settle', '0.2')),
    ];
    await unwedged(flushing, 'flushed()');
    await unwedged(Promise.all(later), 'the checkpoint and the settle');
    await unwedged(m.flushed(), 'flushed() after them');
    await unwedged(
      m.exclusive(async () => {}),
      'the reload the refusal asked for',
    );

    const journal = readJournal(dir);
    const seqOf = (t: string, holdId: string) => journal.find((r) => r.t === t && r.h.id === holdId)?.seq;
    const rows = await deadLetters(t.db);
    expect(rows.map(({ record, ...r }) => r)).toEqual([
      {
        seq: String(seqOf('place', bad.holdId)),
        kind: 'place',
        hold_id: bad.holdId,
        account_id: a.accountId,
        error_code: '54000',
        depends_on: null,
        reloaded: true,
      },
      {
        seq: String(seqOf('checkpoint', bad.holdId)),
        kind: 'checkpoint',
        hold_id: bad.holdId,
        account_id: a.accountId,
        error_code: null,
        depends_on: String(seqOf('place', bad.holdId)),
        reloaded: true,
      },
    ]);
    // Kept whole, for reconciliation.
    expect(JSON.parse(rows[0].record)).toMatchObject({ t: 'place', idem: HUGE_KEY, h: { id: bad.holdId, amount: '300000000' } });
    expect(await counted(metrics)).toEqual({ 'refused/table': 1, 'dependent/table': 1 });
    expect(log.lines).toContainEqual(
      expect.objectContaining({ level: 'error', fields: expect.objectContaining({ seq: seqOf('place', bad.holdId), code: '54000' }) }),
    );

    // The other account's records went in; the dead-lettered hold left no trace in the figures.
    expect(await holdRow(t.db, good.holdId)).toMatchObject({ state: 'settled', charge: '200000000' });
    expect(await figures(t.db, b)).toEqual({
      account: { usage: '200000000', held: '0', available: '800000000' },
      key: { usage: '200000000', held: '0' },
    });
    expect(await t.db.query('SELECT 1 FROM holds WHERE id = $1', [bad.holdId])).toEqual([]);
    expect(await figures(t.db, a)).toEqual({ account: { usage: '0', held: '0', available: '1000000000' }, key: { usage: '0', held: '0' } });
    expect(await applied(t.db)).toBe(journal[journal.length - 1].seq);

    // Memory reloaded from the tables, which never had the hold: its stream's settle finds none. The dead letter
    // holds what it reserved, for the operator to reconcile.
    expect(await m.closeHold(closeEvent(bad, a, 'settle', '0.1'))).toMatchObject({ result: 'unknown' });
    // Holds, admin writes and the sweeper go on, for the same account too; and a stop returns.
    const next = await placeHold(m, a, '0.2');
    await m.closeHold(closeEvent(next, a, 'settle', '0.05'));
    await unwedged(view.query('UPDATE accounts SET suspended = false WHERE id = $1', [a.accountId]), 'an admin write');
    await unwedged(m.sweep(), 'a sweep');
    await unwedged(m.flushed(), 'flushed()');
    expect((await figures(t.db, a)).account.usage).toBe('50000000');
    await unwedged(m.stop(), 'stop()');
  }, 60_000);

  it('opens over a journal holding such a record: dead-letters it and its hold, replays the rest', async () => {
    const first = await open();
    const a = await payer(inMemoryView(t.db, first), '1');
    const b = await payer(inMemoryView(t.db, first), '1');
    await first.stop();
    const from = await applied(t.db);
    const bad = holdFacts(a, 'bad', 300_000_000n);
    const good = holdFacts(b, 'good', 300_000_000n);
    // What a process killed while its write-behind retried the record leaves, its request (a stream) still running.
    // (A hold placed and closed within one batch is inserted closed, outside the open-hold index, and fits.)
    const records: LedgerRecord[] = [
      { seq: from + 1, t: 'place', h: bad, idem: HUGE_KEY, expires_ms: Date.now() + 60_000 },
      { seq: from + 2, t: 'place', h: good, idem: null, expires_ms: Date.now() + 60_000 },
      { seq: from + 3, t: 'checkpoint', h: bad, charge: '50000000', rec: usageRecord },
      { seq: from + 4, t: 'close', h: good, state: 'settled', charge: '200000000', late: false, rec: usageRecord },
    ];
    fs.writeFileSync(path.join(dir, 'seg-0000000000000001.jsonl'), `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);

    const second = await unwedged(open(), 'MemoryLedger.open');
    expect((await deadLetters(t.db)).map((r) => [Number(r.seq), r.kind, r.error_code, r.depends_on && Number(r.depends_on), r.reloaded])).toEqual([
      [from + 1, 'place', '54000', null, true],
      [from + 3, 'checkpoint', null, from + 1, true],
    ]);
    expect(await holdRow(t.db, 'hold_good')).toMatchObject({ state: 'settled', charge: '200000000' });
    expect(await figures(t.db, a)).toEqual({ account: { usage: '0', held: '0', available: '1000000000' }, key: { usage: '0', held: '0' } });
    expect(await applied(t.db)).toBe(from + 4);
    expect(await counted(metrics)).toEqual({ 'refused/table': 1, 'dependent/table': 1 });
    // The ledger is usable, and a third start finds nothing left to replay.
    const h = await placeHold(second, a, '0.1');
    await second.closeHold(closeEvent(h, a, 'settle', '0.1'));
    await unwedged(second.stop(), 'stop()');
    const third = await unwedged(open(), 'the next MemoryLedger.open');
    expect(await deadLetters(t.db)).toHaveLength(2);
    expect((await figures(t.db, a)).account.usage).toBe('100000000');
    await third.stop();
  }, 60_000);

  it('a start skips the journalled records of a hold whose dead letter a killed process left unreconciled with memory', async () => {
    const first = await open();
    const a = await payer(inMemoryView(t.db, first), '1');
    await first.stop();
    const from = await applied(t.db);
    const bad = holdFacts(a, 'bad', 300_000_000n);
    // The killed process had dead-lettered the place (seq consumed) but not yet the settle queued behind it.
    await t.db.transaction(async (tx) => {
      await tx.query('SELECT ledger_write($1, $2, $3::jsonb)', [from, from + 1, '{}']);
      await tx.query(
        `INSERT INTO ledger_dead_letters (seq, kind, hold_id, account_id, record, error_code, error) VALUES ($1, 'place', $2, $3, '{}', '54000', 'x')`,
        [from + 1, bad.id, a.accountId],
      );
    });
    fs.writeFileSync(
      path.join(dir, 'seg-0000000000000001.jsonl'),
      `${JSON.stringify({ seq: from + 2, t: 'close', h: bad, state: 'settled', charge: '100000000', late: false, rec: usageRecord })}\n`,
    );
    const next = await unwedged(open(), 'MemoryLedger.open');
    // Applied, the settle would have taken 0.3 USD off a `held` that never had it (and charged a hold with no row).
    expect((await deadLetters(t.db)).map((r) => [Number(r.seq), r.kind, r.depends_on && Number(r.depends_on), r.reloaded])).toEqual([
      [from + 1, 'place', null, true],
      [from + 2, 'close', from + 1, true],
    ]);
    expect(await figures(t.db, a)).toEqual({ account: { usage: '0', held: '0', available: '1000000000' }, key: { usage: '0', held: '0' } });
    await next.stop();
  }, 60_000);

  it('retries a failure the tables can get over, with backoff, and dead-letters nothing', async () => {
    let failing = 2;
    // The connection drops under the first two batches (SQLSTATE class 08), then comes back.
    const flaky: Db = {
      ...t.db,
      kind: t.db.kind,
      query: (sql, params) =>
        sql.includes('ledger_write') && failing-- > 0
          ? Promise.reject(Object.assign(new Error('connection lost'), { code: '08006' }))
          : t.db.query(sql, params),
      transaction: (fn) => t.db.transaction(fn),
    };
    const m = await open(flaky);
    const a = await payer(inMemoryView(t.db, m), '1');
    const h = await placeHold(m, a, '0.3', { idempotencyKey: 'ordinary' });
    await m.closeHold(closeEvent(h, a, 'settle', '0.1'));
    await unwedged(m.flushed(), 'flushed()');
    expect(await holdRow(t.db, h.holdId)).toMatchObject({ state: 'settled', charge: '100000000' });
    expect(await deadLetters(t.db)).toEqual([]);
    const retries = log.lines.filter((l) => l.msg === 'ledger write-behind failed; retrying').map((l) => l.fields.retryInMs);
    expect(retries).toEqual([200, 400]);
    await m.stop();
  }, 60_000);
});
