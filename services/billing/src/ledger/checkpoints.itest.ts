import { type HoldCheckpoint, type UsageRecorded, usageRecordedSchema } from '@gateway/events';
import { type Engine, describeOnEngines } from '@gateway/db/testing';
import { useLedgerDb, type LedgerSuite } from '../testing/ledger-db';
import { closeEvent, payer, placeHold, type Payer, type PlacedHold } from '../testing/ledger-fixtures';
import { expectLedgerInvariants, figures, holdRow, pastExpiry, usageRecordsOf } from '../testing/ledger-figures';
import { until } from '../testing/until';
import { parseUsd } from '@gateway/money';
import { addCredits } from './accounts';
import type { EventBus } from '@gateway/bus';
import { publishExpiryCharges } from '../publish';
import { expireHolds, sweepHolds } from './holds';
import type { MemoryLedger } from './memory/memory-ledger';

/**
 * A stream's checkpoints (hold.checkpoint.v1) and the expiry that applies the last one, on PostgreSQL, PGlite and the
 * embedded in-memory ledger: a process killed mid-stream never closes its hold, and the hold must still charge what
 * the stream had delivered by its last checkpoint.
 */
describeOnEngines('hold checkpoints', (engine) => checkpointsBehave(engine));
describe('hold checkpoints on the in-memory ledger', () => checkpointsBehave('memory'));

function checkpointEvent(h: PlacedHold, who: Payer, charge: string, tokensCompletion: number): HoldCheckpoint {
  const ev = closeEvent(h, who, 'settle', charge, {
    status: 'failed',
    error_code: 'hold_expired',
    finish_reason: 'error',
    tokens_completion: tokensCompletion,
  });
  return { ...ev, outcome: 'settle' };
}

function checkpointsBehave(engine: Engine | 'memory'): void {
  /** What the sweeps announced as usage.recorded.v1, as billing wires them (index.ts): the catalogue's token count. */
  let announced: UsageRecorded[] = [];
  const bus: Pick<EventBus, 'publish'> = { publish: async (_topic, ev) => void announced.push(usageRecordedSchema.parse(ev.data)) };
  const announce = async (ids: string[]) => void (await publishExpiryCharges(t.db, bus as EventBus, ids));
  const t = useLedgerDb(engine, { onExpired: announce });
  beforeEach(() => {
    announced = [];
  });
  afterEach(() => expectLedgerInvariants(t.db));

  /** Expires every hold past its expiry: the sweeper of the ledger under test. */
  const sweep = (s: LedgerSuite) => (engine === 'memory' ? (s.ledger as MemoryLedger).sweep() : sweepHolds(s.db).then(announce));
  const expire = async (h: PlacedHold) => {
    await until(() => pastExpiry(t.db, h.holdId), 'the hold to pass its expiry');
    await sweep(t);
  };

  it('a hold left unclosed is charged its highest checkpoint at expiry, as a late settle, with what was delivered on its record', async () => {
    const a = await payer(t.db, '1');
    const h = await placeHold(t.ledger, a, '0.5', { ttlMs: 200 });
    expect(await t.ledger.checkpointHold(checkpointEvent(h, a, '0.1', 10))).toBe(true);
    expect(await t.ledger.checkpointHold(checkpointEvent(h, a, '0.3', 30))).toBe(true);
    // Overtaken on the bus by the later one: lower, so it is not kept.
    expect(await t.ledger.checkpointHold(checkpointEvent(h, a, '0.2', 20))).toBe(false);
    expect(await figures(t.db, a)).toMatchObject({ account: { usage: '0', held: '500000000' } });

    await expire(h);
    expect(await holdRow(t.db, h.holdId)).toEqual({ state: 'expired', charge: '300000000', closed: true });
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '300000000', held: '0', available: '700000000' },
      key: { usage: '300000000', held: '0' },
    });
    expect(await usageRecordsOf(t.db, h.requestId)).toEqual([{ status: 'failed', error_code: 'hold_expired', total_cost: '300000000' }]);
    const [rec] = await t.db.query<{ tokens_completion: number }>('SELECT tokens_completion FROM usage_records WHERE request_id = $1', [h.requestId]);
    expect(rec.tokens_completion).toBe(30);
    // Announced like the close it stands for: the catalogue counts the stream's tokens.
    expect(announced).toEqual([
      expect.objectContaining({ hold_id: h.holdId, request_id: h.requestId, outcome: 'settle', charge_nano: '300000000', tokens_completion: 30 }),
    ]);
    // Charged once: the close that arrives after all (the stream outlived its hold) finds it taken.
    expect(await t.ledger.closeHold(closeEvent(h, a, 'settle', '0.4'))).toEqual({ result: 'noop', charged: 300_000_000n });
    await sweep(t);
    expect((await figures(t.db, a)).account.usage).toBe('300000000');
  });

  it('a checkpoint after the close changes nothing, and the closed hold is never charged again', async () => {
    const a = await payer(t.db, '1');
    const h = await placeHold(t.ledger, a, '0.5', { ttlMs: 200 });
    expect(await t.ledger.checkpointHold(checkpointEvent(h, a, '0.1', 10))).toBe(true);
    // The checkpoint in the table before the close (the in-memory ledger writes it behind; a read waits for that).
    expect(await t.db.query('SELECT charge::text AS charge FROM hold_checkpoints WHERE hold_id = $1', [h.holdId])).toEqual([{ charge: '100000000' }]);
    expect((await t.ledger.closeHold(closeEvent(h, a, 'settle', '0.25'))).result).toBe('settled');
    expect(await t.ledger.checkpointHold(checkpointEvent(h, a, '0.4', 40))).toBe(false);
    await until(() => pastExpiry(t.db, h.holdId), 'the hold to pass its expiry');
    await sweep(t);
    expect(await holdRow(t.db, h.holdId)).toEqual({ state: 'settled', charge: '250000000', closed: true });
    expect((await figures(t.db, a)).account).toEqual({ usage: '250000000', held: '0', available: '750000000' });
    expect(announced).toEqual([]); // its close announced it; the sweep has nothing of it to announce
    // Spent with its hold's close: the table keeps only open holds' checkpoints.
    expect(await t.db.query('SELECT hold_id FROM hold_checkpoints WHERE hold_id = $1', [h.holdId])).toEqual([]);
  });

  it('a checkpoint above the hold is charged the hold, never more', async () => {
    const a = await payer(t.db, '1');
    const capped = await placeHold(t.ledger, a, '0.2', { ttlMs: 200 });
    await t.ledger.checkpointHold(checkpointEvent(capped, a, '0.9', 90));
    await expire(capped);
    expect(await holdRow(t.db, capped.holdId)).toEqual({ state: 'expired', charge: '200000000', closed: true });
    expect((await figures(t.db, a)).account).toEqual({ usage: '200000000', held: '0', available: '800000000' });
  });

  it('every due hold is given back before any checkpoint is charged: a key already over its lowered cap still takes both', async () => {
    const a = await payer(t.db, '10', '1');
    const first = await placeHold(t.ledger, a, '0.5', { ttlMs: 200 });
    const second = await placeHold(t.ledger, a, '0.5', { ttlMs: 200 });
    await t.ledger.checkpointHold(checkpointEvent(first, a, '0.3', 30));
    await t.ledger.checkpointHold(checkpointEvent(second, a, '0.3', 30));
    // The operator lowers the cap below what the key holds. Charged hold by hold, the first checkpoint would meet the
    // second hold still held (0.5 + 0.3 > 0.7) and be dropped; with both given back first, 0.3 + 0.3 fits.
    await t.db.query('UPDATE api_keys SET spend_limit = $2 WHERE id = $1', [a.keyId, '700000000']);
    await until(() => pastExpiry(t.db, second.holdId), 'both holds to pass their expiry');
    await sweep(t);
    for (const h of [first, second]) expect(await holdRow(t.db, h.holdId)).toEqual({ state: 'expired', charge: '300000000', closed: true });
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '600000000', held: '0', available: '9400000000' },
      key: { usage: '600000000', held: '0' },
    });
  });

  // PostgreSQL only: the one engine with concurrent transactions. Found by the ledger properties (properties.itest.ts).
  if (engine === 'postgres')
    it('a due hold whose checkpoint is being written while the sweep runs is still expired by that sweep', async () => {
      const a = await payer(t.db, '1');
      const h = await placeHold(t.ledger, a, '0.5', { ttlMs: 200 });
      await until(() => pastExpiry(t.db, h.holdId), 'the hold to pass its expiry');
      const ev = checkpointEvent(h, a, '0.1', 10);
      await t.db.transaction(async (tx) => {
        // Until this commits, the checkpoint's foreign key holds the hold's row FOR KEY SHARE.
        await tx.query('SELECT checkpoint_hold($1, $2, $3)', [h.holdId, '100000000', JSON.stringify(ev.record)]);
        await expireHolds(t.db);
      });
      // The sweep could not see the uncommitted checkpoint: the hold went back uncharged, open to one late close.
      expect(await holdRow(t.db, h.holdId)).toEqual({ state: 'expired', charge: '0', closed: false });
      expect((await figures(t.db, a)).account).toEqual({ usage: '0', held: '0', available: '1000000000' });
    });

  // PostgreSQL only, found by the ledger properties: checkpoint_hold takes no lock on the hold, so the race can go
  // either way; what it must never do is charge anything but one of the two checkpoints, or charge twice.
  if (engine === 'postgres')
    it('a checkpoint racing the sweep of its hold may answer kept; the sweep charges the one before it, as if it came first', async () => {
      const a = await payer(t.db, '1');
      const h = await placeHold(t.ledger, a, '0.5', { ttlMs: 200 });
      expect(await t.ledger.checkpointHold(checkpointEvent(h, a, '0.1', 10))).toBe(true);
      await until(() => pastExpiry(t.db, h.holdId), 'the hold to pass its expiry');
      const ev = checkpointEvent(h, a, '0.3', 30);
      const kept = await t.db.transaction(async (tx) => {
        const [row] = await tx.query<{ kept: boolean }>('SELECT checkpoint_hold($1, $2, $3) AS kept', [
          h.holdId,
          '300000000',
          JSON.stringify(ev.record),
        ]);
        await expireHolds(t.db);
        return row.kept;
      });
      expect(kept).toBe(true);
      expect(await holdRow(t.db, h.holdId)).toEqual({ state: 'expired', charge: '100000000', closed: true });
      expect(await usageRecordsOf(t.db, h.requestId)).toEqual([{ status: 'failed', error_code: 'hold_expired', total_cost: '100000000' }]);
      // Taken once: the stream's close finds it closed, and the row the late checkpoint left is spent by the next sweep.
      expect(await t.ledger.closeHold(closeEvent(h, a, 'settle', '0.4'))).toEqual({ result: 'noop', charged: 100_000_000n });
      await expireHolds(t.db);
      expect(await t.db.query('SELECT hold_id FROM hold_checkpoints WHERE hold_id = $1', [h.holdId])).toEqual([]);
      expect((await figures(t.db, a)).account).toEqual({ usage: '100000000', held: '0', available: '900000000' });
    });

  // The in-memory ledger only: an admin change makes it forget every account until its next use.
  if (engine === 'memory')
    it('a checkpoint that arrives while its account reloads after an admin change is the one charged at expiry', async () => {
      const a = await payer(t.db, '2');
      const h = await placeHold(t.ledger, a, '0.5', { ttlMs: 300 });
      await addCredits(t.db, a.accountId, parseUsd('1')); // the admin API's top-up
      // The next hold reloads the account from the tables while the checkpoint arrives.
      const [, kept] = await Promise.all([placeHold(t.ledger, a, '0.1'), t.ledger.checkpointHold(checkpointEvent(h, a, '0.3', 30))]);
      expect(kept).toBe(true);
      await expire(h);
      expect(await holdRow(t.db, h.holdId)).toEqual({ state: 'expired', charge: '300000000', closed: true });
    });

  it('a hold without a checkpoint is released at expiry, charged nothing, as before', async () => {
    const a = await payer(t.db, '1');
    const h = await placeHold(t.ledger, a, '0.5', { ttlMs: 200 });
    await expire(h);
    expect(await holdRow(t.db, h.holdId)).toEqual({ state: 'expired', charge: '0', closed: false });
    expect((await figures(t.db, a)).account).toEqual({ usage: '0', held: '0', available: '1000000000' });
  });
}
