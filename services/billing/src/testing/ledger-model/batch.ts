/**
 * What every checker of a batch reads: the commands as resolved, their outcomes, the ledger before and after, and
 * the model they move. The commands of a batch run at once (Promise.all): their order is not known, so each outcome
 * is checked against bounds that hold in every order, computed from the state before the batch and the other
 * outcomes of the batch. With one command per batch the bounds are exact and every outcome is the model's.
 */
import type { CloseResult } from '../../ledger/holds';
import type { Tally } from './tally';
import type { CloseOp, Fail, HoldState, Model, ModelHold, Op, Outcome, Snapshot } from './model';

export interface ScenarioOptions {
  /**
   * A known defect, tolerated and counted instead of failing the run: on PostgreSQL a sweep that expires holds of
   * two keys of one account can deadlock (40P01) with a place or close on the second key (see the regression test in
   * properties.itest.ts). The victim's transaction is rolled back, so it is checked as a command that did nothing.
   */
  tolerateSweepDeadlock?: boolean;
  /**
   * A known defect of the in-memory ledger: an admin change (top-up, cap, a new account or key) makes it forget every
   * account's open holds until that account is used again, and its sweep only sees the holds it remembers. With
   * this set, a due hold a sweep left open is not a failure (everything else about the sweep still is).
   */
  sweepMayMissForgottenHolds?: boolean;
}

export interface Batch {
  ops: Op[];
  outcomes: Outcome[];
  before: Snapshot;
  after: Snapshot;
  /** How many holds of the whole database were expired before and after the batch. */
  expiredBefore: number;
  expiredAfter: number;
  /** Every model hold's state when the batch began. */
  stateBefore: Map<string, { state: HoldState; lateClosed: boolean }>;
  hasSweep: boolean;
  /** The open short holds the batch's sweep must expire (each was past its expiry before the batch ran). */
  due: ModelHold[];
  model: Model;
  tally: Tally;
  opts: ScenarioOptions;
  /** Throws with the batch's commands and outcomes. */
  fail: Fail;
}

/** A close of the batch that answered, with its command's index. */
export type CloseSeen = { op: CloseOp; result: CloseResult; charged: bigint; i: number };

/** Charges taken, and charges dropped, on holds that had expired unclosed. */
export interface LateCloses {
  charges: { hold: ModelHold; charged: bigint }[];
  dropped: { hold: ModelHold; wanted: bigint }[];
}
