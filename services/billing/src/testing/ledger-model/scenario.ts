/**
 * One run of the ledger's properties: opens the setup's accounts and keys, then runs the batches one after another
 * (the commands of a batch concurrently) and hands each batch to the checkers in ./checks, in the order of their
 * numbers: each one moves the model only by the outcomes that passed it, and the last one holds the whole ledger to
 * the model. No test framework here: a failed check throws.
 */
import type { Batch, LateCloses, ScenarioOptions } from './batch';
import { checkCheckpoints } from './checks/checkpoints';
import { checkCheckpointsAtExpiry, offeredCheckpoints } from './checks/checkpoints-at-expiry';
import { checkCloses, collectCloses } from './checks/closes';
import { checkExpiries } from './checks/expiries';
import { checkLevers } from './checks/levers';
import { checkModelEqualsLedger } from './checks/model-equals-ledger';
import { checkMoneyBounds } from './checks/money-bounds';
import { checkNewHolds } from './checks/new-holds';
import { checkOutcomes } from './checks/outcomes';
import { checkRetries } from './checks/retries';
import { describeOp, describeOutcome } from './describe';
import { execOp, resolveCmd } from './commands';
import type { LedgerHarness } from './harness';
import {
  type Cmd,
  defaultFail,
  type Fail,
  jsonBig,
  LedgerPropertyError,
  type Model,
  type Op,
  type Outcome,
  type Setup,
  type Snapshot,
  UNIT,
} from './model';
import type { Tally } from './tally';

/**
 * One run: opens the setup's accounts and keys, runs the batches one after another (the commands of a batch
 * concurrently), and checks every outcome and the ledger after every batch. Throws on the first violation.
 */
export async function runScenario(h: LedgerHarness, setup: Setup, batches: Cmd[][], tally: Tally, opts: ScenarioOptions = {}): Promise<void> {
  const m = new Scenario(h, tally, opts);
  await m.open(setup);
  for (const [i, batch] of batches.entries()) await m.runBatch(batch, i);
  tally.runs++;
}

class Scenario {
  private readonly model: Model = { accounts: [], caps: new Map(), holds: [], byId: new Map() };
  private before!: Snapshot;
  private expiredBefore = 0;

  constructor(
    private readonly h: LedgerHarness,
    private readonly tally: Tally,
    private readonly opts: ScenarioOptions,
  ) {}

  async open(setup: Setup): Promise<void> {
    for (const a of setup.accounts) {
      const credits = BigInt(a.credits) * UNIT;
      const id = await this.h.openAccount(credits);
      const keys: string[] = [];
      for (const c of a.caps) {
        const cap = c === null ? null : BigInt(c) * UNIT;
        const k = await this.h.openKey(id, cap);
        this.model.caps.set(k, cap);
        keys.push(k);
      }
      this.model.accounts.push({ id, credits, keys });
    }
    this.before = await this.h.snapshot(this.accountIds());
    this.expiredBefore = await this.h.expiredTotal();
    checkModelEqualsLedger(this.model, this.before, defaultFail('after opening the accounts'));
  }

  private accountIds() {
    return this.model.accounts.map((a) => a.id);
  }

  async runBatch(cmds: Cmd[], index: number): Promise<void> {
    const ops = cmds.map((c) => resolveCmd(this.model, c)).filter((o): o is Op => o !== undefined);
    if (ops.length === 0) return;
    const before = this.before;
    // A sweep's expiries are deterministic for the holds placed before the batch: wait (on the database's clock)
    // until every open short hold is past its expiry, so the sweep must expire each one nobody closes first.
    const hasSweep = ops.some((o) => o.kind === 'sweep');
    const due = hasSweep ? this.model.holds.filter((x) => x.state === 'open' && x.short) : [];
    if (due.length > 0) {
      const deadline = Date.now() + 10_000;
      while (!(await this.h.pastExpiry(due.map((x) => x.id)))) {
        if (Date.now() > deadline) throw new Error('the short holds never passed their expiry on the database clock');
        await new Promise((r) => setTimeout(r, 2));
      }
    }
    const stateBefore = new Map(this.model.holds.map((x) => [x.id, { state: x.state, lateClosed: x.lateClosed }]));

    const outcomes: Outcome[] = await Promise.all(
      ops.map((op) =>
        execOp(this.h, this.model, op).then(
          (value): Outcome => ({ ok: true, value }),
          (error): Outcome => ({ ok: false, error }),
        ),
      ),
    );
    const after = await this.h.snapshot(this.accountIds());
    const expiredAfter = await this.h.expiredTotal();

    this.tally.batches++;
    if (ops.length > 1) this.tally.concurrentBatches++;
    this.tally.ops += ops.length;
    const fail: Fail = (what, extra = {}) => {
      throw new LedgerPropertyError(
        `batch ${index}: ${what}\n${JSON.stringify({ ...extra, batch: ops.map((o, i) => ({ op: describeOp(o), outcome: describeOutcome(outcomes[i]) })) }, jsonBig, 1)}`,
      );
    };
    const b: Batch = {
      ops,
      outcomes,
      before,
      after,
      expiredBefore: this.expiredBefore,
      expiredAfter,
      stateBefore,
      hasSweep,
      due,
      model: this.model,
      tally: this.tally,
      opts: this.opts,
      fail,
    };

    const { placedNow, aborted } = checkOutcomes(b);
    checkNewHolds(b, placedNow);
    const { expiredNow, sweepAborted } = checkExpiries(b, aborted);
    const closesOf = collectCloses(b);
    const late: LateCloses = { charges: [], dropped: [] };
    const offersOf = offeredCheckpoints(b);
    const chargedAtExpiry = checkCheckpointsAtExpiry(b, { expiredNow, sweepAborted, closesOf, offersOf }, late);
    checkCloses(b, { closesOf, expiredNow, chargedAtExpiry }, late);
    checkCheckpoints(b, { expiredNow, closesOf, offersOf });
    checkRetries(b, aborted);
    checkMoneyBounds(b, { aborted, placedNow, expiredNow, closesOf }, late);
    checkLevers(b);
    checkModelEqualsLedger(this.model, after, fail);
    this.before = after;
    this.expiredBefore = expiredAfter;
  }
}
