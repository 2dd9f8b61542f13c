import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openTestDb, type TestDb } from '@gateway/db/testing';
import { GatewayError } from '@gateway/errors';
import { createLogger, createMetrics, type Metrics } from '@gateway/service-kit';
import { migrations } from '../../migrations';
import { eio, heldSyncs } from '../../testing/held-syncs';
import { inMemoryView } from '../../testing/ledger-db';
import { expectLedgerInvariants, figures } from '../../testing/ledger-figures';
import { closeEvent, payer, placeHold } from '../../testing/ledger-fixtures';
import { until } from '../../testing/until';
import { MemoryLedger } from './memory-ledger';

/** Whether `p` has settled after the turns in which a settled sync would have resolved it. */
async function settledYet(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return done;
}

const healthGauge = async (metrics: Metrics) => (await metrics.registry.getSingleMetric('gateway_ledger_journal_healthy')?.get())?.values[0]?.value;

/**
 * The in-memory ledger when its journal cannot make a decision durable (a flush held back, or failed by a disk
 * fault): nothing is acknowledged before it is on disk, and a failed journal refuses, shows and says so.
 */
describe('the in-memory ledger and its journal’s health', () => {
  let t: TestDb;
  let dir: string;
  const logger = createLogger('test', 'silent');
  /** This test's held flushes and ledger: let go and stopped after it, failed or not, so a failure cannot hang the run. */
  let syncs: ReturnType<typeof heldSyncs>;
  let ledger: MemoryLedger | undefined;
  const open = async (metrics?: Metrics) => {
    ledger = await MemoryLedger.open({ db: t.db, logger, journalDir: dir, journalDatasync: syncs.datasync, metrics });
    return ledger;
  };
  beforeEach(async () => {
    t = await openTestDb('pglite', 'billing', migrations);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-journal-'));
    syncs = heldSyncs();
    ledger = undefined;
  }, 60_000);
  afterEach(async () => {
    jest.restoreAllMocks();
    const stopping = ledger?.stop();
    while (syncs.held.length > 0 || (stopping && !(await settledYet(stopping)))) syncs.held.shift()?.();
    await stopping;
    await expectLedgerInvariants(t.db);
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('acknowledges a redelivered close (noop) only once the first close’s record is on disk', async () => {
    const { held } = syncs;
    const m = await open();
    const a = await payer(inMemoryView(t.db, m), '1');
    const h = await placeHold(m, a, '0.5');
    const close = closeEvent(h, a, 'settle', '0.2');
    const first = m.closeHold(close);
    await until(() => held.length === 1, 'the close waits for a flush');
    // The bus redelivers the close (its handler timed out, or another consumer took it) while the flush runs.
    const again = m.closeHold(close);
    // Before the fix the noop returned at once: acknowledged while the settle could still vanish in a power cut.
    expect(await settledYet(again)).toBe(false);
    held.shift()?.();
    expect(await first).toEqual({ result: 'settled', charged: 200_000_000n });
    expect(await again).toEqual({ result: 'noop', charged: 200_000_000n });
  });

  it('once a flush fails: readiness and the gauge say so, the error is logged once, holds and closes are refused with a retryable 503', async () => {
    const { held } = syncs;
    const metrics = createMetrics();
    const errors = jest.spyOn(logger, 'error');
    const m = await open(metrics);
    const a = await payer(inMemoryView(t.db, m), '1');
    expect(await healthGauge(metrics)).toBe(1);
    expect(() => m.ready()).not.toThrow();
    const h = await placeHold(m, a, '0.5');
    const other = await placeHold(m, a, '0.1');
    const close = closeEvent(h, a, 'settle', '0.2');
    const first = m.closeHold(close);
    await until(() => held.length === 1, 'the close waits for a flush');
    held.shift()?.(eio());
    // Not acknowledged: the bus keeps the close.
    await expect(first).rejects.toThrow('EIO');

    expect(() => m.ready()).toThrow('journal');
    expect(await healthGauge(metrics)).toBe(0);
    // A redelivery finds the hold closed in memory, but its record never reached the disk: still not acknowledged.
    await expect(m.closeHold(close)).rejects.toMatchObject({ status: 503 });
    // Before the fix a later close was decided, buffered for a journal that never wrote again, and failed only at its wait.
    const refused = await m.closeHold(closeEvent(other, a, 'settle', '0.05')).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(GatewayError);
    expect(refused).toMatchObject({ code: 'upstream_unavailable', status: 503 });
    // A new hold would take money the ledger could not record.
    await m.flushed();
    const before = await figures(t.db, a);
    await expect(placeHold(m, a, '0.1')).rejects.toMatchObject({ code: 'upstream_unavailable', status: 503 });
    await m.flushed();
    expect(await figures(t.db, a)).toEqual(before);
    expect(errors.mock.calls.filter(([, msg]) => typeof msg === 'string' && msg.includes('journal failed'))).toHaveLength(1);
  });
});
