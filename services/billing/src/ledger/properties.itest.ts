import fc from 'fast-check';
import type { Db } from '@gateway/db';
import { parseUsd } from '@gateway/money';
import { createLogger } from '@gateway/service-kit';
import { describeOnEngines, openTestDb } from '@gateway/db/testing';
import { migrations } from '../migrations';
import { inMemoryView, type LedgerSuite, useLedgerDb } from '../testing/ledger-db';
import { expectLedgerInvariants, holdRow, pastExpiry } from '../testing/ledger-figures';
import { closeEvent, payer, placeHold } from '../testing/ledger-fixtures';
import { until } from '../testing/until';
import { addCredits, createAccount } from './accounts';
import { createKey } from './keys';
import { createLedger, expireHolds, type Ledger } from './holds';
import { type Cmd, type LedgerHarness, type ScenarioOptions, type Setup, runScenario, sqlHarness, Tally } from '../testing/ledger-model';
import { MemoryLedger } from './memory/memory-ledger';

/**
 * The ledger's properties (MONEY.md), on random interleavings: holds placed, settled (below, at and above the
 * hold), released, replayed and retried, streams' checkpoints kept and charged when their short hold is swept,
 * top-ups and corrections, key caps set, raised, lowered and removed, on several accounts and keys, each batch of
 * commands run concurrently (Promise.all), so PGlite's group commit and PostgreSQL's row locks both see contention.
 * testing/ledger-model checks every outcome and the whole ledger after every batch: never overspend, never charge twice,
 * always balance.
 *
 * The SQL ledger runs on PostgreSQL and PGlite; the embedded gateway's in-memory ledger (ledger/memory) runs the
 * same properties at the end of the file. Another implementation of the Ledger interface plugs in here:
 */
const ledgerUnderTest = (db: Db): Ledger => createLedger(db);

/**
 * Known defect, found by these properties: expire_holds takes each due hold's key row then its account row, hold
 * after hold, in one transaction. Sweeping holds of two keys of one account, it holds the account's row while it
 * waits for the second key's row, which a place_hold or close_hold on that key holds while it waits for the
 * account's row: PostgreSQL aborts one of them with 40P01 after deadlock_timeout. Until expire_holds takes every key
 * row, then every account row, in id order (the lock order place_hold documents), the properties count such a
 * victim as a rolled-back command instead of failing, and the regression test below is `it.failing`.
 */
const SWEEP_DEADLOCK_KNOWN = false;

/** Runs per property; LEDGER_PROPERTY_RUNS scales them all (e.g. 10 for a quick look, 500 for a long soak). */
const SCALE = Number(process.env.LEDGER_PROPERTY_RUNS ?? 1);
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
/** Each property's time, scaled with its runs; fast-check stops 20 s before it to report what it found. */
const PROPERTY_TIMEOUT_MS = Math.round(120_000 * Math.max(1, SCALE));
/** A fixed seed (LEDGER_PROPERTY_SEED) replays a reported failure; LEDGER_PROPERTY_SHRINK=0 reports the first failure unshrunk. */
const SEED = process.env.LEDGER_PROPERTY_SEED === undefined ? undefined : Number(process.env.LEDGER_PROPERTY_SEED);
const END_ON_FAILURE = process.env.LEDGER_PROPERTY_SHRINK === '0';

/**
 * A scenario takes tens of milliseconds. One that takes seconds is a finding even when it passes (a lock wait, a
 * retry loop), and a few of them run a property into its time limit: each is printed whole, to replay with fc's
 * `examples`. Twice a run failed at that limit and its log was lost; this leaves the culprit in the next one.
 */
const SLOW_SCENARIO_MS = 5_000;
function reportIfSlow(engine: string, ms: number, setup: Setup, batches: Cmd[][]): void {
  if (ms < SLOW_SCENARIO_MS) return;
  process.stderr.write(`ledger properties on ${engine}: a scenario took ${Math.round(ms)} ms: ${JSON.stringify({ setup, batches })}\n`);
}

const setupArb = (maxAccounts: number): fc.Arbitrary<Setup> =>
  fc.record({
    accounts: fc.array(
      fc.record({
        credits: fc.integer({ min: 0, max: 40 }),
        caps: fc.array(fc.option(fc.integer({ min: 0, max: 30 }), { freq: 3, nil: null }), { minLength: 1, maxLength: 2 }),
      }),
      { minLength: 1, maxLength: maxAccounts },
    ),
  });

const place: fc.Arbitrary<Cmd> = fc.record({
  kind: fc.constant('place' as const),
  account: fc.nat(2),
  key: fc.nat(1),
  units: fc.integer({ min: 1, max: 8 }),
  nano: fc.nat(999),
  short: fc.boolean(),
  idem: fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat(1) }),
  foreign: fc.integer({ min: 0, max: 15 }).map((n) => n === 0),
});
const holdRef = fc.nat(40);
/** Mostly within the hold, sometimes above it (to be capped at the hold). */
const pct = fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 100 }) }, { weight: 1, arbitrary: fc.integer({ min: 101, max: 300 }) });
const settle: fc.Arbitrary<Cmd> = fc.record({ kind: fc.constant('settle' as const), hold: holdRef, pct });
const release: fc.Arbitrary<Cmd> = fc.record({ kind: fc.constant('release' as const), hold: holdRef });
/** A stream's progress: what it has delivered so far, sometimes above the hold, sometimes below the last one. */
const checkpoint: fc.Arbitrary<Cmd> = fc.record({ kind: fc.constant('checkpoint' as const), hold: holdRef, pct });
const retry: fc.Arbitrary<Cmd> = fc.record({ kind: fc.constant('retry' as const), hold: holdRef });
const ghost: fc.Arbitrary<Cmd> = fc.record({ kind: fc.constant('ghost' as const), settle: fc.boolean() });
const sweep: fc.Arbitrary<Cmd> = fc.constant({ kind: 'sweep' as const });
/** Top-ups, and now and then a correction that takes credit back. */
const credit: fc.Arbitrary<Cmd> = fc.record({ kind: fc.constant('credit' as const), account: fc.nat(2), units: fc.integer({ min: -6, max: 12 }) });
const cap: fc.Arbitrary<Cmd> = fc.record({
  kind: fc.constant('cap' as const),
  account: fc.nat(2),
  key: fc.nat(1),
  units: fc.option(fc.integer({ min: 0, max: 30 }), { freq: 4, nil: null }),
});

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 8, arbitrary: place },
  { weight: 5, arbitrary: settle },
  { weight: 2, arbitrary: release },
  { weight: 3, arbitrary: checkpoint },
  { weight: 1, arbitrary: retry },
  { weight: 2, arbitrary: sweep },
  { weight: 2, arbitrary: credit },
  { weight: 2, arbitrary: cap },
  { weight: 1, arbitrary: ghost },
);

/** Batches of `maxBatch` commands at most, run one batch after another. */
const batchesArb = (maxBatch: number, maxBatches: number) =>
  fc.array(fc.array(cmdArb, { minLength: 1, maxLength: maxBatch }), { minLength: Math.min(4, maxBatches), maxLength: maxBatches });

/** Hot spot: one account, its keys fought over by places and closes, larger batches. */
const hotCmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 10, arbitrary: place },
  { weight: 6, arbitrary: settle },
  { weight: 2, arbitrary: release },
  { weight: 3, arbitrary: checkpoint },
  { weight: 2, arbitrary: sweep },
  { weight: 1, arbitrary: credit },
  { weight: 1, arbitrary: cap },
);

/** One ledger under test: which, and how it is reached. */
interface Target {
  name: string;
  suite: LedgerSuite;
  harness: () => LedgerHarness;
  opts: ScenarioOptions;
  /** Maps every generated command list (the in-memory ledger leaves out what a known defect of it would wedge). */
  commands?: (cmds: Cmd[][]) => Cmd[][];
}

/** The properties, the same for every ledger under test. */
function ledgerProperties(target: () => Target): void {
  const tally = new Tally();
  afterAll(() => {
    // The figures of the run, for whoever reads the log: how much the properties exercised on this ledger.
    process.stderr.write(`ledger properties on ${target().name}: ${tally.summary()}\n`);
  });

  const check = (setup: fc.Arbitrary<Setup>, batches: fc.Arbitrary<Cmd[][]>, numRuns: number) =>
    fc.assert(
      fc.asyncProperty(setup, batches, async (s, b) => {
        const t = target();
        const started = performance.now();
        try {
          return await runScenario(t.harness(), s, t.commands ? t.commands(b) : b, tally, t.opts);
        } finally {
          reportIfSlow(t.name, performance.now() - started, s, b);
        }
      }),
      {
        numRuns,
        endOnFailure: END_ON_FAILURE,
        // A failure's shrinking can outlast the test's timeout, which would then report neither the seed nor the
        // counterexample: stop in time and report the smallest one found so far.
        interruptAfterTimeLimit: PROPERTY_TIMEOUT_MS - 20_000,
        markInterruptAsFailure: true,
        ...(SEED === undefined ? {} : { seed: SEED }),
      },
    );

  it('one command at a time: every outcome is exactly the model’s', () => check(setupArb(3), batchesArb(1, 24), runs(40)), PROPERTY_TIMEOUT_MS);

  it(
    'concurrent batches on several accounts and keys: never overspend, never charge twice, always balance',
    () => check(setupArb(3), batchesArb(6, 14), runs(60)),
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'contention on one account: large concurrent batches',
    () => check(setupArb(1), fc.array(fc.array(hotCmdArb, { minLength: 4, maxLength: 14 }), { minLength: 2, maxLength: 6 }), runs(40)),
    PROPERTY_TIMEOUT_MS,
  );

  it('leaves the whole database balanced (MONEY.md invariants 1 and 3, every account and key)', () => expectLedgerInvariants(target().suite.db));
}

describeOnEngines('ledger properties', (engine) => {
  const t = useLedgerDb(engine);
  ledgerProperties(() => ({
    name: engine,
    suite: t,
    harness: () => sqlHarness(t.db, ledgerUnderTest),
    opts: { tolerateSweepDeadlock: engine === 'postgres' && SWEEP_DEADLOCK_KNOWN },
  }));

  if (engine !== 'postgres') return;
  // The deadlock above, made deterministic: a transaction takes key 2's row then the account's row, in place_hold's
  // order, while a sweep of two expired holds (key 1's first) runs between its two steps.
  (SWEEP_DEADLOCK_KNOWN ? it.failing : it)('a sweep of holds on two keys of one account never deadlocks with a hold on the second key', async () => {
    const accountId = await createAccount(t.db, 10n * UNIT_USD, {});
    const k1 = (await createKey(t.db, accountId, {})).key_id;
    const k2 = (await createKey(t.db, accountId, {})).key_id;
    const first = await placeHold(t.ledger, { accountId, keyId: k1 }, '0.1', { ttlMs: 1 });
    const second = await placeHold(t.ledger, { accountId, keyId: k2 }, '0.1', { ttlMs: 20 });
    const due = () => t.db.query(`SELECT 1 FROM holds WHERE id IN ($1, $2) AND expires_at < clock_timestamp()`, [first.holdId, second.holdId]);
    await until(async () => (await due()).length === 2, 'both holds to pass their expiry');

    let sweep: Promise<number> | undefined;
    await t.db.transaction(async (tx) => {
      await tx.query('UPDATE api_keys SET held = held WHERE id = $1', [k2]);
      sweep = expireHolds(t.db);
      sweep.catch(() => undefined); // awaited below; a rejection before that is not unhandled
      const sweepWaits = async () =>
        (
          await t.db.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%expire_holds%'`,
          )
        ).length > 0;
      await until(sweepWaits, 'the sweep to wait for the second key');
      await tx.query('UPDATE accounts SET held = held WHERE id = $1', [accountId]);
    });
    // At least these two: holds the properties above left to expire in this database are swept along.
    await expect(sweep).resolves.toBeGreaterThanOrEqual(2);
    const states = await t.db.query<{ state: string }>(`SELECT state FROM holds WHERE id IN ($1, $2)`, [first.holdId, second.holdId]);
    expect(states.map((r) => r.state)).toEqual(['expired', 'expired']);
    await expectLedgerInvariants(t.db);
  });
});

const UNIT_USD = 1_000_000_000n;

/**
 * Known defects of the in-memory ledger, found by these properties (each has its `it.failing` test below):
 * - A request id whose hold has closed is placed again, as a second hold, where place_hold answers 409 `finished`.
 *   The write-behind then fails on holds_one_per_request and retries forever: the tables never catch up again and
 *   every read that waits for them (admin, /v1/credits, generation) waits forever. The properties leave retries out.
 * - An admin change (`exclusive`: a top-up, a cap, a new account or key) makes it forget every account's open holds
 *   until that account is used again, and the sweep only looks at the holds it remembers: a hold nobody closes
 *   stays open past its expiry (MONEY.md invariant 2). The properties do not require a sweep to expire every due hold.
 */
const MEMORY_REPLAY_KNOWN = false;
const MEMORY_FORGETS_KNOWN = false;

describe('ledger properties on the in-memory ledger', () => {
  const t = useLedgerDb('memory');
  // The sweep its timer runs in the embedded gateway (started there by start(), which the tests do not call).
  const sweep = async () => {
    await (t.ledger as MemoryLedger).sweep();
    return undefined;
  };
  ledgerProperties(() => ({
    name: 'the in-memory ledger',
    suite: t,
    harness: () => sqlHarness(t.db, () => t.ledger, { sweep }),
    opts: { sweepMayMissForgottenHolds: MEMORY_FORGETS_KNOWN },
    commands: MEMORY_REPLAY_KNOWN ? (b) => b.map((batch) => batch.filter((c) => c.kind !== 'retry')) : undefined,
  }));

  (MEMORY_FORGETS_KNOWN ? it.failing : it)('a hold open across an admin change is still expired by the sweep', async () => {
    const a = await payer(t.db, '1');
    const h = await placeHold(t.ledger, a, '0.3', { ttlMs: 1 });
    await addCredits(t.db, a.accountId, parseUsd('1')); // the admin API's top-up
    await until(() => pastExpiry(t.db, h.holdId), 'the hold to pass its expiry');
    await sweep();
    expect(await holdRow(t.db, h.holdId)).toMatchObject({ state: 'expired' });
  });

  (MEMORY_REPLAY_KNOWN ? it.failing : it)(
    'a request id whose hold has closed is refused with 409, and the tables still take every decision',
    async () => {
      // A ledger of its own: with the defect, its write-behind never drains again.
      const opened = await openTestDb('pglite', 'billing', migrations);
      const memory = await MemoryLedger.open({ db: opened.db, logger: createLogger('test', 'silent') });
      try {
        const a = await payer(inMemoryView(opened.db, memory), '1');
        const h = await placeHold(memory, a, '0.3');
        await memory.closeHold(closeEvent(h, a, 'settle', '0.1'));
        await expect(placeHold(memory, a, '0.3', { requestId: h.requestId })).rejects.toMatchObject({ code: 'duplicate_request' });
        await memory.stop(); // drains the write-behind
      } finally {
        await opened.close();
      }
    },
    60_000,
  );
});
