/**
 * The model the property tests hold the ledger to: the commands a run draws, what they resolve to against the
 * accounts, keys and holds opened so far, the ledger's state as the harness reads it, and the bounds arithmetic.
 */
import type { Hold } from '@gateway/billing-client';

/** Amounts are drawn in units of one cent (plus a few nano-USD, so nothing is a round number). */
export const UNIT = 10_000_000n;
/** A short hold is due for the sweeper almost at once; a long one never expires within a run. */
export const SHORT_TTL_MS = 1;
export const LONG_TTL_MS = 600_000;

export interface Setup {
  /** Per account: its credits in units, and its keys' caps in units (null: no cap). */
  accounts: { credits: number; caps: (number | null)[] }[];
}

/** Indexes pick an account, a key of it, or a hold placed earlier (modulo how many there are). */
export type Cmd =
  | { kind: 'place'; account: number; key: number; units: number; nano: number; short: boolean; idem: number | null; foreign: boolean }
  | { kind: 'retry'; hold: number }
  | { kind: 'settle'; hold: number; pct: number }
  | { kind: 'release'; hold: number }
  | { kind: 'checkpoint'; hold: number; pct: number }
  | { kind: 'ghost'; settle: boolean }
  | { kind: 'sweep' }
  | { kind: 'credit'; account: number; units: number }
  | { kind: 'cap'; account: number; key: number; units: number | null };

export interface SnapAccount {
  credits: bigint;
  usage: bigint;
  held: bigint;
  /** Sum of the account's credit entries (grants and corrections). */
  entries: bigint;
  /** Sum of the account's usage records' total_cost. */
  recorded: bigint;
}
export interface SnapKey {
  account: string;
  cap: bigint | null;
  usage: bigint;
  held: bigint;
}
export interface SnapHold {
  account: string;
  key: string;
  request: string;
  idem: string | null;
  amount: bigint;
  state: HoldState;
  charge: bigint;
  closed: boolean;
  /** The hold's kept checkpoint (hold_checkpoints), if any. */
  checkpoint: bigint | null;
  /** The usage record of the hold's request id, if any. */
  record: { holdId: string | null; cost: bigint; status: string; errorCode: string | null } | null;
}
export interface Snapshot {
  accounts: Map<string, SnapAccount>;
  keys: Map<string, SnapKey>;
  holds: Map<string, SnapHold>;
}
export type HoldState = 'open' | 'settled' | 'released' | 'expired';

export interface ModelHold {
  id: string;
  requestId: string;
  account: string;
  key: string;
  amount: bigint;
  short: boolean;
  idem: string | null;
  state: HoldState;
  /** An expired hold whose one late close (settle or release) has been taken. */
  lateClosed: boolean;
  lateOutcome: 'settle' | 'release' | null;
  charge: bigint;
  /** The highest checkpoint kept while open: what an expiry charges (capped at the hold) if it still fits. */
  checkpoint: bigint | null;
}

/** What the ledger should hold: moved only by outcomes that passed their checks, and by the sweeps' expiries. */
export interface Model {
  accounts: { id: string; credits: bigint; keys: string[] }[];
  caps: Map<string, bigint | null>;
  holds: ModelHold[];
  byId: Map<string, ModelHold>;
}

export type Op =
  | { kind: 'place'; account: string; key: string; amount: bigint; short: boolean; idem: string | null; foreign: boolean; requestId: string }
  | { kind: 'retry'; hold: ModelHold }
  | { kind: 'close'; hold: ModelHold; outcome: 'settle' | 'release'; charge: bigint }
  | { kind: 'checkpoint'; hold: ModelHold; charge: bigint }
  | { kind: 'ghost'; outcome: 'settle' | 'release' }
  | { kind: 'sweep' }
  | { kind: 'credit'; account: string; amount: bigint }
  | { kind: 'cap'; key: string; cap: bigint | null };
export type PlaceOp = Extract<Op, { kind: 'place' }>;
export type CloseOp = Extract<Op, { kind: 'close' }>;
export type CapOp = Extract<Op, { kind: 'cap' }>;
/** A placed hold of the batch, with its command's index. */
export type Placed = { op: PlaceOp; hold: Hold; i: number };

export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export const min = (a: bigint, b: bigint) => (a < b ? a : b);
export const max = (a: bigint, b: bigint) => (a > b ? a : b);
export const INF = null;
/** Bigint or +infinity (null). */
export type Bound = bigint | null;
export const le = (x: bigint, bound: Bound) => bound === INF || x <= bound;
export const gt = (x: bigint, bound: Bound) => bound !== INF && x > bound;

/** A property failure, with the batch that showed it. */
export class LedgerPropertyError extends Error {}

export type Fail = (what: string, extra?: Record<string, unknown>) => never;

/** A map's entry that the model knows is there. */
export function got<K, V>(m: Map<K, V>, k: K): V {
  const v = m.get(k);
  if (v === undefined) throw new LedgerPropertyError(`no entry for ${String(k)}`);
  return v;
}

export function jsonBig(_k: string, v: unknown) {
  return typeof v === 'bigint' ? v.toString() : v;
}
export const show = (o: object) => JSON.stringify(o, jsonBig);

export function defaultFail(when: string): Fail {
  return (what, extra = {}) => {
    throw new LedgerPropertyError(`${when}: ${what} ${JSON.stringify(extra, jsonBig)}`);
  };
}
