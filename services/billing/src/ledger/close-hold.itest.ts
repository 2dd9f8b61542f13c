import { describeOnEngines } from '@gateway/db/testing';
import { useLedgerDb } from '../testing/ledger-db';
import { closeEvent, payer, placeHold, type Payer, type PlacedHold } from '../testing/ledger-fixtures';
import { expectLedgerInvariants, figures, holdRow, pastExpiry, usageRecordsOf } from '../testing/ledger-figures';
import { until } from '../testing/until';
import { generationRecord } from './generation';
import { expireHolds } from './holds';

/** close_hold's failure paths (ledger/sql/close_hold.sql), on PostgreSQL and PGlite. */
describeOnEngines('close_hold', (engine) => {
  const t = useLedgerDb(engine);
  afterEach(() => expectLedgerInvariants(t.db));

  /** A hold of `amount` USD that the sweeper has already released (its TTL was 1 ms). */
  async function expiredHold(who: Payer, amount: string): Promise<PlacedHold> {
    const h = await placeHold(t.ledger, who, amount, { ttlMs: 1 });
    await until(() => pastExpiry(t.db, h.holdId), 'the hold to pass its expiry');
    await expireHolds(t.db);
    expect(await holdRow(t.db, h.holdId)).toMatchObject({ state: 'expired', closed: false });
    return h;
  }

  it('closing an unknown hold changes nothing and writes no usage record', async () => {
    const a = await payer(t.db, '1');
    const open = await placeHold(t.ledger, a, '0.4');
    const before = await figures(t.db, a);
    const ghost = { ...open, holdId: 'hold_never_placed', requestId: 'req_of_a_ghost_hold' };
    expect(await t.ledger.closeHold(closeEvent(ghost, a, 'settle', '0.3'))).toEqual({ result: 'unknown', charged: 0n });
    expect(await figures(t.db, a)).toEqual(before);
    expect(await usageRecordsOf(t.db, ghost.requestId)).toEqual([]);
    await t.ledger.closeHold(closeEvent(open, a, 'release', '0'));
  });

  it('a release after expiry gives nothing back twice and is taken once', async () => {
    const a = await payer(t.db, '1', '1');
    const h = await expiredHold(a, '0.6');
    const restored = { account: { usage: '0', held: '0', available: '1000000000' }, key: { usage: '0', held: '0' } };
    expect(await figures(t.db, a)).toEqual(restored);

    expect(await t.ledger.closeHold(closeEvent(h, a, 'release', '0'))).toEqual({ result: 'late_dropped', charged: 0n });
    expect(await figures(t.db, a)).toEqual(restored);
    expect(await holdRow(t.db, h.holdId)).toEqual({ state: 'expired', charge: '0', closed: true });
    // The late close's record replaces the sweeper's hold_expired one: it says what really happened.
    expect(await usageRecordsOf(t.db, h.requestId)).toEqual([{ status: 'failed', error_code: 'upstream_unavailable', total_cost: '0' }]);
    expect(await t.ledger.closeHold(closeEvent(h, a, 'release', '0'))).toEqual({ result: 'noop', charged: 0n });
  });

  it("a late settle that the key's spend cap cannot cover is dropped", async () => {
    const a = await payer(t.db, '10', '1');
    const late = await expiredHold(a, '0.6');
    const other = await placeHold(t.ledger, a, '0.5');
    // The key has 1 - 0.5 held = 0.5 of room; the account has plenty, so only the cap refuses the 0.6.
    expect(await t.ledger.closeHold(closeEvent(late, a, 'settle', '0.6'))).toEqual({ result: 'late_dropped', charged: 0n });
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '0', held: '500000000', available: '9500000000' },
      key: { usage: '0', held: '500000000' },
    });
    expect(await usageRecordsOf(t.db, late.requestId)).toEqual([{ status: 'succeeded', error_code: null, total_cost: '0' }]);
    await t.ledger.closeHold(closeEvent(other, a, 'release', '0'));
  });

  it('a late settle that still fits is charged to the key and the account, once', async () => {
    const a = await payer(t.db, '1', '1');
    const h = await expiredHold(a, '0.2');
    expect(await t.ledger.closeHold(closeEvent(h, a, 'settle', '0.15'))).toEqual({ result: 'late_charged', charged: 150_000_000n });
    const charged = { account: { usage: '150000000', held: '0', available: '850000000' }, key: { usage: '150000000', held: '0' } };
    expect(await figures(t.db, a)).toEqual(charged);
    expect(await usageRecordsOf(t.db, h.requestId)).toEqual([{ status: 'succeeded', error_code: null, total_cost: '150000000' }]);
    expect(await t.ledger.closeHold(closeEvent(h, a, 'settle', '0.15'))).toEqual({ result: 'noop', charged: 150_000_000n });
    expect(await figures(t.db, a)).toEqual(charged);
  });

  it("a late settle the account cannot cover rolls the key's usage back, and a release restores the key's held", async () => {
    const a = await payer(t.db, '1', '10');
    const late = await expiredHold(a, '0.6');
    const other = await placeHold(t.ledger, a, '0.9');
    // The key's cap lets 0.3 through, the account has only 0.1 available: the key's usage must not keep it.
    expect(await t.ledger.closeHold(closeEvent(late, a, 'settle', '0.3'))).toEqual({ result: 'late_dropped', charged: 0n });
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '0', held: '900000000', available: '100000000' },
      key: { usage: '0', held: '900000000' },
    });
    expect(await t.ledger.closeHold(closeEvent(other, a, 'release', '0'))).toEqual({ result: 'released', charged: 0n });
    expect(await figures(t.db, a)).toEqual({ account: { usage: '0', held: '0', available: '1000000000' }, key: { usage: '0', held: '0' } });
  });

  it('a repeated request id after its hold was closed is refused with 409: nothing held, nothing charged again', async () => {
    const a = await payer(t.db, '1', '1');
    const h = await placeHold(t.ledger, a, '0.5');
    await t.ledger.closeHold(closeEvent(h, a, 'settle', '0.2'));
    const settled = { account: { usage: '200000000', held: '0', available: '800000000' }, key: { usage: '200000000', held: '0' } };

    await expect(placeHold(t.ledger, a, '0.5', { requestId: h.requestId })).rejects.toMatchObject({ code: 'duplicate_request', status: 409 });
    expect(await figures(t.db, a)).toEqual(settled);
    // A redelivered close of the first hold changes nothing either.
    expect(await t.ledger.closeHold(closeEvent(h, a, 'settle', '0.5'))).toEqual({ result: 'noop', charged: 200_000_000n });
    expect(await figures(t.db, a)).toEqual(settled);
    expect(await usageRecordsOf(t.db, h.requestId)).toHaveLength(1);
  });

  it("keeps the record's usage_estimated flag for the generation record, false when the event has none", async () => {
    const a = await payer(t.db, '1');
    const measured = await placeHold(t.ledger, a, '0.5');
    const reported = await placeHold(t.ledger, a, '0.5');
    await t.ledger.closeHold(closeEvent(measured, a, 'settle', '0.2', { usage_estimated: true }));
    // An event from a producer that predates the flag: close_hold reads its absence as false.
    const legacy = closeEvent(reported, a, 'settle', '0.1');
    delete (legacy.record as Partial<typeof legacy.record>).usage_estimated;
    await t.ledger.closeHold(legacy);
    expect(await generationRecord(t.db, a.accountId, measured.requestId)).toMatchObject({ usage_estimated: true, cost: '0.2' });
    expect(await generationRecord(t.db, a.accountId, reported.requestId)).toMatchObject({ usage_estimated: false, cost: '0.1' });
  });
});
