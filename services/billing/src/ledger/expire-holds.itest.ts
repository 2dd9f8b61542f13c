import { describeOnEngines } from '@gateway/db/testing';
import { useLedgerDb } from '../testing/ledger-db';
import { payer, placeHold } from '../testing/ledger-fixtures';
import { expectLedgerInvariants, figures, holdRow, pastExpiry, usageRecordsOf } from '../testing/ledger-figures';
import { until } from '../testing/until';
import { expireHolds } from './holds';

/** The sweeper (ledger/sql/expire_holds.sql), on PostgreSQL and PGlite. */
describeOnEngines('expire_holds', (engine) => {
  const t = useLedgerDb(engine);
  afterEach(() => expectLedgerInvariants(t.db));

  it('the sweeper releases a hold past its expiry and leaves unexpired holds open', async () => {
    const a = await payer(t.db, '1', '1');
    const short = await placeHold(t.ledger, a, '0.3', { ttlMs: 1 });
    const long = await placeHold(t.ledger, a, '0.2', { ttlMs: 60_000 });
    await until(() => pastExpiry(t.db, short.holdId), 'the short hold to pass its expiry');

    expect(await expireHolds(t.db)).toBeGreaterThanOrEqual(1);
    expect(await holdRow(t.db, short.holdId)).toEqual({ state: 'expired', charge: '0', closed: false });
    expect(await holdRow(t.db, long.holdId)).toMatchObject({ state: 'open' });
    const swept = { account: { usage: '0', held: '200000000', available: '800000000' }, key: { usage: '0', held: '200000000' } };
    expect(await figures(t.db, a)).toEqual(swept);
    expect(await usageRecordsOf(t.db, short.requestId)).toEqual([{ status: 'failed', error_code: 'hold_expired', total_cost: '0' }]);

    await expireHolds(t.db); // a second sweep finds nothing of this account's to give back again
    expect(await figures(t.db, a)).toEqual(swept);
  });

  it('a hold whose close was never published blocks the key until the sweep releases it at expiry', async () => {
    const a = await payer(t.db, '1', '0.5');
    const before = await figures(t.db, a);
    // The request ran, but its settle or release never reached the bus: nothing will ever close this hold.
    const lost = await placeHold(t.ledger, a, '0.5', { ttlMs: 1 });
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '0', held: '500000000', available: '500000000' },
      key: { usage: '0', held: '500000000' },
    });
    await expect(placeHold(t.ledger, a, '0.5')).rejects.toMatchObject({ code: 'insufficient_credits' });

    await until(() => pastExpiry(t.db, lost.holdId), 'the lost hold to pass its expiry');
    await expireHolds(t.db);
    expect(await holdRow(t.db, lost.holdId)).toMatchObject({ state: 'expired' });
    expect(await figures(t.db, a)).toEqual(before);
    await expect(placeHold(t.ledger, a, '0.5')).resolves.toMatchObject({ amountNano: 500_000_000n });
  });
});
