import { createMemoryBus, type EventBus, type Subscription } from '@gateway/bus';
import { describeOnEngines, withFaults, type FaultyDb } from '@gateway/db/testing';
import { EVENT_TYPES, TOPICS, type HoldClose } from '@gateway/events';
import { consumeHoldCloses } from './consumers';
import { createLedger, type CloseResult, type Ledger } from './ledger/holds';
import { useLedgerDb } from './testing/ledger-db';
import { closeEvent, payer, placeHold } from './testing/ledger-fixtures';
import { expectLedgerInvariants, figures, holdRow, usageRecordsOf } from './testing/ledger-figures';
import { recordingLogger, type LogLine } from './testing/recording-logger';
import { until } from './testing/until';

/**
 * The hold-close consumer's failure paths, on the memory bus (which redelivers what a handler throws on, like the
 * brokers) over a database that fails on demand, on PostgreSQL and PGlite.
 */
describeOnEngines('hold-close consumer', (engine) => {
  const t = useLedgerDb(engine);
  let faulty: FaultyDb;
  let bus: EventBus;
  let subscription: Subscription;
  let lines: LogLine[];
  let busErrors: unknown[];
  /** Every close_hold answer the consumer got, in order: how a test sees a delivery that changed nothing. */
  let results: CloseResult[];

  beforeEach(async () => {
    faulty = withFaults(t.db);
    const inner = createLedger(faulty);
    const ledger: Ledger = {
      placeHold: (req) => inner.placeHold(req),
      closeHold: async (ev) => {
        const out = await inner.closeHold(ev);
        results.push(out.result);
        return out;
      },
      checkpointHold: (ev) => inner.checkpointHold(ev),
    };
    results = [];
    busErrors = [];
    // The bus's default: a failing close is retried until handled. Its retries are reported too; a drop is what must not happen.
    bus = createMemoryBus({ retryBaseMs: 1, onError: (err, ctx) => void (ctx.action !== 'will-retry' && busErrors.push(err)) });
    const log = recordingLogger();
    lines = log.lines;
    subscription = await consumeHoldCloses(ledger, bus, log.logger);
  });
  afterEach(async () => {
    faulty.up();
    await subscription.close();
    await bus.close();
    expect(busErrors).toEqual([]); // nothing was dropped by the bus: every event was handled or redelivered
    await expectLedgerInvariants(t.db);
  });

  const publish = (ev: HoldClose, id = `${ev.hold_id}:close`) =>
    bus.publish(TOPICS.holds, { id, type: EVENT_TYPES.holdClose, key: ev.hold_id, data: ev });
  const logged = (msg: string) => lines.filter((l) => l.msg === msg);

  it('a malformed event is dropped and logged, and the next event on its key still applies', async () => {
    const a = await payer(t.db, '1');
    const h = await placeHold(t.ledger, a, '0.5');
    await bus.publish(TOPICS.holds, {
      id: 'malformed:1',
      type: EVENT_TYPES.holdClose,
      key: h.holdId,
      data: { hold_id: h.holdId, outcome: 'settle' },
    });
    await publish(closeEvent(h, a, 'settle', '0.2'));

    await until(async () => (await holdRow(t.db, h.holdId)).state === 'settled', 'the event behind the malformed one to settle the hold');
    expect(logged('dropping malformed hold event')).toEqual([
      {
        level: 'error',
        fields: expect.objectContaining({ eventId: 'malformed:1', issues: expect.any(Array) }),
        msg: 'dropping malformed hold event',
      },
    ]);
    expect(results).toEqual(['settled']); // the malformed event never reached the ledger
    expect((await figures(t.db, a)).account).toEqual({ usage: '200000000', held: '0', available: '800000000' });
  });

  it('close_hold failing while the database is down is redelivered after it is back and applied exactly once', async () => {
    const a = await payer(t.db, '1', '1');
    const h = await placeHold(t.ledger, a, '0.5');
    const ev = closeEvent(h, a, 'settle', '0.3');
    faulty.down();
    await publish(ev);
    await until(() => faulty.failures >= 3, 'the consumer to retry against the down database');
    expect(await holdRow(t.db, h.holdId)).toMatchObject({ state: 'open' });
    expect(results).toEqual([]);

    faulty.up();
    await until(() => results.length === 1, 'the redelivered settle to apply');
    await publish(ev); // and a broker's duplicate of the same event after that
    await until(() => results.length === 2, 'the duplicate to be handled');

    expect(results).toEqual(['settled', 'noop']);
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '300000000', held: '0', available: '700000000' },
      key: { usage: '300000000', held: '0' },
    });
    expect(await usageRecordsOf(t.db, h.requestId)).toEqual([{ status: 'succeeded', error_code: null, total_cost: '300000000' }]);
  });

  it('a settle whose answer was lost after it committed is redelivered as a no-op: charged once', async () => {
    const a = await payer(t.db, '1', '1');
    const h = await placeHold(t.ledger, a, '0.5');
    faulty.loseNextAnswer();
    await publish(closeEvent(h, a, 'settle', '0.3'));

    await until(() => results.length === 1, 'the redelivery after the lost answer');
    expect(faulty.failures).toBe(1);
    expect(results).toEqual(['noop']); // the first delivery applied it but never heard so
    expect(await figures(t.db, a)).toEqual({
      account: { usage: '300000000', held: '0', available: '700000000' },
      key: { usage: '300000000', held: '0' },
    });
  });

  it('each applied close is announced as usage.recorded.v1, and a redelivery repeats the same event id and figures', async () => {
    const seen: { id: string; key: string; data: unknown }[] = [];
    const usage = await bus.subscribe('test-usage', [TOPICS.usage], async (e) => void seen.push({ id: e.id, key: e.key, data: e.data }));
    try {
      const a = await payer(t.db, '1');
      const h = await placeHold(t.ledger, a, '0.5');
      const ev = closeEvent(h, a, 'settle', '0.3', { tokens_prompt: 7, tokens_completion: 5 });
      await publish(ev);
      await publish(ev, `${ev.hold_id}:close-again`);
      await until(() => seen.length === 2, 'two usage events');
      expect(results).toEqual(['settled', 'noop']);
      expect(seen[0]).toEqual(seen[1]);
      expect(seen[0]).toMatchObject({
        id: `${h.holdId}:usage`,
        key: a.accountId,
        data: { hold_id: h.holdId, account_id: a.accountId, outcome: 'settle', charge_nano: '300000000', tokens_prompt: 7, tokens_completion: 5 },
      });
    } finally {
      await usage.close();
    }
  });

  it('an event for an unknown hold is logged and applies nothing', async () => {
    const a = await payer(t.db, '1');
    const before = await figures(t.db, a);
    const ghost = closeEvent({ holdId: 'hold_never_placed', requestId: 'req_ghost_consumer', amountNano: 0n, expiresAt: '' }, a, 'settle', '0.3');
    await publish(ghost);

    await until(() => logged('hold event for an unknown hold; nothing applied').length === 1, 'the unknown hold to be logged');
    expect(logged('hold event for an unknown hold; nothing applied')[0]).toMatchObject({
      level: 'warn',
      // What it meant to charge, for reconciling a dead-lettered hold (docs/operations.md).
      fields: { holdId: 'hold_never_placed', requestId: 'req_ghost_consumer', result: 'unknown', charged: '0', chargeNano: '300000000' },
    });
    expect(await figures(t.db, a)).toEqual(before);
    expect(await usageRecordsOf(t.db, 'req_ghost_consumer')).toEqual([]);
  });

  it('a capped charge is logged with the figure the upstream reported and the one charged', async () => {
    const a = await payer(t.db, '1');
    const h = await placeHold(t.ledger, a, '0.1');
    // The money flow caps the charge at the hold and reports the upstream's figure beside it.
    await publish(closeEvent(h, a, 'settle', '0.1', { capped_from_nano: '700000000' }));

    await until(() => logged('upstream reported more than the hold; charge capped').length === 1, 'the capped charge to be logged');
    expect(logged('upstream reported more than the hold; charge capped')[0]).toMatchObject({
      level: 'warn',
      fields: { holdId: h.holdId, requestId: h.requestId, reported: '700000000', charged: '100000000' },
    });
    expect((await figures(t.db, a)).account).toEqual({ usage: '100000000', held: '0', available: '900000000' });
  });
});
