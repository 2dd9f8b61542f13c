import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openTestDb, type TestDb } from '@gateway/db/testing';
import { createMemoryBus, type BusEvent } from '@gateway/bus';
import { EVENT_TYPES, TOPICS, type UsageRecord, usageRecordedSchema } from '@gateway/events';
import { parseUsd } from '@gateway/money';
import { createLogger } from '@gateway/service-kit';
import { migrations } from '../../migrations';
import { inMemoryView } from '../../testing/ledger-db';
import { expectLedgerInvariants, figures, holdRow, usageRecordsOf } from '../../testing/ledger-figures';
import { closeEvent, holdFacts, payer, placeHold, type Payer } from '../../testing/ledger-fixtures';
import { publishExpiryCharges } from '../../publish';
import { until } from '../../testing/until';
import { readJournal } from './journal';
import { MemoryLedger } from './memory-ledger';
import type { LedgerRecord } from './records';

const logger = createLogger('test', 'silent');

/**
 * The embedded in-memory ledger across process lifetimes: what its journal must bring back after a kill, what it
 * must never apply twice, and the holds a dead process leaves. One PGlite database stands for the data directory;
 * each "process" is a new MemoryLedger over it, with the journal directory it left behind.
 */
describe('the in-memory ledger across restarts', () => {
  let t: TestDb;
  let dir: string;
  beforeEach(async () => {
    t = await openTestDb('pglite', 'billing', migrations);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-journal-'));
  }, 60_000);
  afterEach(async () => {
    await expectLedgerInvariants(t.db);
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const open = (liveJobHolds?: () => Promise<string[]>, onExpired?: (holdIds: string[]) => Promise<void>) =>
    MemoryLedger.open({ db: t.db, logger, journalDir: dir, liveJobHolds, onExpired });
  const applied = async () => Number((await t.db.query<{ s: string }>('SELECT applied_seq::text AS s FROM ledger_journal'))[0].s);
  /** A 0.5 USD hold a killed process placed, as its journal keeps it, and the record of a settle of it at `charge` USD. */
  const journalled = (a: Payer, name: string) => {
    const facts = holdFacts(a, name, 500_000_000n);
    const recordOf = (charge: string, fields: Partial<UsageRecord> = {}) =>
      closeEvent({ holdId: facts.id, requestId: facts.request, amountNano: 500_000_000n, expiresAt: '' }, a, 'settle', charge, fields).record;
    return { facts, recordOf };
  };
  /** What a process killed before its write-behind ran leaves: these records in its journal, nothing in the tables. */
  const killedWith = (records: LedgerRecord[]) => {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'seg-0000000000000001.jsonl'), `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
  };

  it('a settle is on disk in the journal before closeHold resolves', async () => {
    const m = await open();
    const a = await payer(inMemoryView(t.db, m), '1');
    const h = await placeHold(m, a, '0.5');
    await m.closeHold(closeEvent(h, a, 'settle', '0.2'));
    const onDisk = readJournal(dir);
    expect(onDisk.map((r) => [r.t, r.h.id])).toEqual([
      ['place', h.holdId],
      ['close', h.holdId],
    ]);
    await m.stop();
  });

  it('replays the records a killed process journalled but never wrote to the tables: its settle is charged once', async () => {
    const m = await open();
    const a = await payer(inMemoryView(t.db, m), '1');
    await m.stop();
    const from = await applied();
    const { facts, recordOf } = journalled(a, 'k1');
    const rec = recordOf('0.2');
    killedWith([
      { seq: from + 1, t: 'place', h: facts, idem: null, expires_ms: Date.now() + 60_000 },
      { seq: from + 2, t: 'close', h: facts, state: 'settled', charge: '200000000', late: false, rec },
    ]);

    const next = await open();
    expect(await holdRow(t.db, 'hold_k1')).toMatchObject({ state: 'settled', charge: '200000000' });
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '200000000', held: '0', available: '800000000' },
      key: { usage: '200000000', held: '0' },
    });
    expect(await applied()).toBe(from + 2);
    // The replayed journal is gone: a third start finds nothing to apply again.
    expect(readJournal(dir)).toEqual([]);
    await next.stop();
  });

  it('applies a journal twice only once: records the tables already hold are skipped, not charged again', async () => {
    const m = await open();
    const view = inMemoryView(t.db, m);
    const a = await payer(view, '1');
    const h = await placeHold(m, a, '0.5');
    await m.closeHold(closeEvent(h, a, 'settle', '0.3'));
    await m.flushed();
    const records = readJournal(dir);
    await m.stop();
    // A kill after the tables took the batch but before the segment was removed: the next start reads it again.
    killedWith(records);
    const next = await open();
    expect((await figures(t.db, a)).account.usage).toBe('300000000');
    expect(await usageRecordsOf(t.db, h.requestId)).toHaveLength(1);
    await next.stop();
  });

  it('charges at start the last checkpoint of a stream a killed process left open, from its journal alone', async () => {
    const m = await open();
    const a = await payer(inMemoryView(t.db, m), '1');
    await m.stop();
    const from = await applied();
    const { facts, recordOf } = journalled(a, 's1');
    const rec = recordOf('0.15', { status: 'failed', error_code: 'hold_expired', tokens_completion: 15 });
    // Killed mid-stream before its write-behind ran: the place and two checkpoints are in the journal only.
    killedWith([
      { seq: from + 1, t: 'place', h: facts, idem: null, expires_ms: Date.now() + 60_000 },
      { seq: from + 2, t: 'checkpoint', h: facts, charge: '50000000', rec: { ...rec, tokens_completion: 5 } },
      { seq: from + 3, t: 'checkpoint', h: facts, charge: '150000000', rec },
    ]);

    const bus = createMemoryBus();
    const announced: BusEvent[] = [];
    await bus.subscribe('catalogue', [TOPICS.usage], async (ev) => {
      announced.push(ev);
    });
    const next = await open(undefined, async (ids) => void (await publishExpiryCharges(t.db, bus, ids)));
    expect(await holdRow(t.db, 'hold_s1')).toEqual({ state: 'expired', charge: '150000000', closed: true });
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '150000000', held: '0', available: '850000000' },
      key: { usage: '150000000', held: '0' },
    });
    expect(await usageRecordsOf(t.db, 'req_s1')).toEqual([{ status: 'failed', error_code: 'hold_expired', total_cost: '150000000' }]);
    // Announced once the process starts (its consumers are listening by then), as the close it stands for would be.
    expect(announced).toEqual([]);
    next.start();
    await until(() => announced.length > 0, 'the checkpoint charge to be announced');
    expect(announced).toEqual([
      expect.objectContaining({
        id: 'hold_s1:usage',
        type: EVENT_TYPES.usageRecorded,
        key: a.accountId,
        data: expect.objectContaining({
          hold_id: 'hold_s1',
          request_id: 'req_s1',
          outcome: 'settle',
          charge_nano: '150000000',
          tokens_completion: 15,
        }),
      }),
    ]);
    expect(usageRecordedSchema.safeParse(announced[0].data).success).toBe(true);
    await next.stop();
    await bus.close();
  });

  it('releases at start the holds a dead process left open, keeping those a live job owns', async () => {
    const m = await open();
    const a = await payer(inMemoryView(t.db, m), '1');
    const request = await placeHold(m, a, '0.2');
    const job = await placeHold(m, a, '0.3');
    await m.flushed();
    // Killed here: both holds are open in the tables, and only the job's has an owner that will close it.
    const next = await open(async () => [job.holdId]);
    expect(await holdRow(t.db, request.holdId)).toMatchObject({ state: 'expired', charge: '0' });
    expect(await usageRecordsOf(t.db, request.requestId)).toEqual([{ status: 'failed', error_code: 'hold_expired', total_cost: '0' }]);
    expect(await holdRow(t.db, job.holdId)).toMatchObject({ state: 'open' });
    // The job's worker, in the new process, settles the hold the old one placed.
    expect(await next.closeHold(closeEvent(job, a, 'settle', '0.25'))).toEqual({ result: 'settled', charged: 250_000_000n });
    await next.flushed();
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '250000000', held: '0', available: '750000000' },
      key: { usage: '250000000', held: '0' },
    });
    await next.stop();
  });

  it("writes behind without the foreign keys' checks for its own batches only: the session refuses an orphan checkpoint after one", async () => {
    const m = await open();
    const a = await payer(inMemoryView(t.db, m), '1');
    const h = await placeHold(m, a, '0.2');
    await m.closeHold(closeEvent(h, a, 'settle', '0.1'));
    await m.flushed();
    expect(await holdRow(t.db, h.holdId)).toMatchObject({ state: 'settled', charge: '100000000' });
    // ledger_write ran as a replica in its transaction; the same PGlite session is back to checking every key after it.
    const [{ role }] = await t.db.query<{ role: string }>("SELECT current_setting('session_replication_role') AS role");
    expect(role).toBe('origin');
    await expect(t.db.query(`INSERT INTO hold_checkpoints (hold_id, charge, record) VALUES ('hold_none', 1, '{}')`)).rejects.toMatchObject({
      code: '23503',
    });
    await m.stop();
  });

  it('sees a top-up made through exclusive at the very next hold', async () => {
    const m = await open();
    const view = inMemoryView(t.db, m);
    const a = await payer(view, '1');
    await placeHold(m, a, '0.9');
    await expect(placeHold(m, a, '0.5')).rejects.toMatchObject({ code: 'insufficient_credits' });
    await view.query('UPDATE accounts SET total_credits = total_credits + $2 WHERE id = $1', [a.accountId, parseUsd('1').toString()]);
    await expect(placeHold(m, a, '0.5')).resolves.toMatchObject({ amountNano: 500_000_000n });
    await m.stop();
  });

  it('expires a hold nobody closed and takes a late settle that still fits, once', async () => {
    const m = await MemoryLedger.open({ db: t.db, logger, journalDir: dir, sweepIntervalMs: 20 });
    m.start();
    const a = await payer(inMemoryView(t.db, m), '1');
    const h = await placeHold(m, a, '0.4', { ttlMs: 1 });
    await new Promise((r) => setTimeout(r, 100));
    await m.flushed();
    expect(await holdRow(t.db, h.holdId)).toMatchObject({ state: 'expired', closed: false });
    expect((await figures(t.db, a)).account.held).toBe('0');
    expect(await m.closeHold(closeEvent(h, a, 'settle', '0.1'))).toEqual({ result: 'late_charged', charged: 100_000_000n });
    expect(await m.closeHold(closeEvent(h, a, 'settle', '0.1'))).toEqual({ result: 'noop', charged: 100_000_000n });
    await m.flushed();
    expect(await holdRow(t.db, h.holdId)).toMatchObject({ state: 'expired', charge: '100000000', closed: true });
    expect(await usageRecordsOf(t.db, h.requestId)).toEqual([expect.objectContaining({ total_cost: '100000000' })]);
    await m.stop();
  });

  it('answers a close of a hold it no longer remembers from the tables: a redelivery after the write-behind is a no-op', async () => {
    const m = await open();
    const a = await payer(inMemoryView(t.db, m), '1');
    const h = await placeHold(m, a, '0.5');
    await m.closeHold(closeEvent(h, a, 'settle', '0.2'));
    await m.flushed();
    expect(await m.closeHold(closeEvent(h, a, 'settle', '0.2'))).toEqual({ result: 'noop', charged: 200_000_000n });
    expect((await figures(t.db, a)).account.usage).toBe('200000000');
    await m.stop();
  });
});
