import type { HoldRequest } from '@gateway/billing-client';
import type { HoldCheckpoint, HoldClose } from '@gateway/events';
import type { CloseResult, PlaceOutcome } from '../holds';
import type { HoldFacts } from './records';
import { FinishedRequests } from './finished-requests';

export interface KeyState {
  limit: bigint | null;
  usage: bigint;
  held: bigint;
}

export interface AccountState {
  id: string;
  credits: bigint;
  usage: bigint;
  held: bigint;
  suspended: boolean;
  keys: Map<string, KeyState>;
}

export interface MemHold {
  facts: HoldFacts;
  amount: bigint;
  idem: string | null;
  expiresAt: number;
  state: 'open' | 'settled' | 'released' | 'expired';
  /** Set by a close; an expired hold without it can still take one late settle (as close_hold's closed_at). */
  closed: boolean;
  charge: bigint;
  /** The last record about this hold: once the tables hold it, a closed hold leaves memory. */
  lastSeq: number;
  /** A streaming hold's highest checkpoint so far: applied as a late settle if the hold expires unclosed. */
  checkpoint?: HoldCheckpoint;
}

const pair = (account: string, x: string) => `${account}\u0000${x}`;

/**
 * How long a closed request id is remembered, to refuse a retry of it as place_hold does (409 finished). Request ids
 * are made fresh per request by this process, so a repeat is a bug's retry, which comes at once. Every call adds one,
 * about 100 bytes (FinishedRequests), so the window is the ledger's live data under load: a minute of them is about
 * 40 MiB at 6,400 calls/s, and V8 keeps a heap of twice its live data (--heap-growing-percent); 15 s is a quarter.
 * A later repeat is caught by the tables (holds_one_per_request): the write-behind skips it and memory reloads from
 * the tables, so the request is never charged twice either way.
 */
export const FINISHED_RETENTION_MS = 15_000;

/**
 * The embedded ledger's figures and open holds, authoritative in its one process. Every decision is
 * place_hold's, close_hold's or expire_holds' rule, applied to the same numbers, synchronously: nothing else can
 * run between a check and its write, which is what the SQL gets from row locks. The account must be loaded
 * (MemoryLedger does that) before anything here touches it.
 */
export class Book {
  readonly accounts = new Map<string, AccountState>();
  readonly holds = new Map<string, MemHold>();
  private readonly openByRequest = new Map<string, MemHold>();
  private readonly openByIdem = new Map<string, MemHold>();
  /** Request ids whose hold has left 'open': no later fact can make one open again, so clear() keeps them. */
  private readonly finished = new FinishedRequests();

  /** Forgets the figures and open holds: the next use of an account loads them again from the tables. */
  clear(): void {
    this.accounts.clear();
    this.holds.clear();
    this.openByRequest.clear();
    this.openByIdem.clear();
  }

  /** Every open hold, loaded accounts' included: the sweep's view. */
  openHolds(): IterableIterator<MemHold> {
    return this.openByRequest.values();
  }

  /** A request id the tables closed without this object (the SQL path for holds memory did not hold). */
  markFinished(account: string, request: string): void {
    this.finished.add(account, request, Date.now());
  }

  forgetFinishedBefore(t: number): void {
    this.finished.forgetBefore(t);
  }

  /** An account as the tables have it, with its open holds (which a later close must find). */
  adopt(account: AccountState, open: MemHold[]): void {
    this.accounts.set(account.id, account);
    for (const h of open) this.track(h);
  }

  place(a: AccountState, req: HoldRequest, id: string, now: number): PlaceOutcome & { hold?: MemHold } {
    const existing = this.openByRequest.get(pair(a.id, req.requestId));
    if (existing) return { outcome: 'existing', hold_id: existing.facts.id, amount: existing.amount, expires_at: new Date(existing.expiresAt) };
    if (this.finished.has(a.id, req.requestId)) return { outcome: 'finished' };
    if (req.idempotencyKey !== undefined && this.openByIdem.has(pair(a.id, req.idempotencyKey))) return { outcome: 'duplicate' };

    const amount = req.amountNano;
    const key = a.keys.get(req.keyId);
    if (!key) return { outcome: 'key_limit', key_room: 0n };
    if (key.limit !== null && key.usage + key.held + amount > key.limit) {
      const room = key.limit - key.usage - key.held;
      return { outcome: 'key_limit', key_room: room > 0n ? room : 0n };
    }
    if (a.suspended) return { outcome: 'suspended' };
    if (a.credits - a.usage - a.held < amount) return { outcome: 'insufficient', balance: a.credits - a.usage, held: a.held };

    key.held += amount;
    a.held += amount;
    const hold: MemHold = {
      facts: { id, account: a.id, key: req.keyId, request: req.requestId, model: req.model, amount: amount.toString(), created_ms: now },
      amount,
      idem: req.idempotencyKey ?? null,
      expiresAt: now + req.ttlMs,
      state: 'open',
      closed: false,
      charge: 0n,
      lastSeq: 0,
    };
    this.track(hold);
    return { outcome: 'placed', hold_id: id, amount, expires_at: new Date(hold.expiresAt), hold };
  }

  /** close_hold's rules; `late` says the hold had expired (its amount already given back). */
  close(h: MemHold, a: AccountState, ev: Pick<HoldClose, 'outcome' | 'charge_nano'>): { result: CloseResult; charged: bigint; late: boolean } {
    if (h.state === 'settled' || h.state === 'released' || (h.state === 'expired' && h.closed)) {
      return { result: 'noop', charged: h.charge, late: false };
    }
    const asked = ev.outcome === 'settle' ? BigInt(ev.charge_nano) : 0n;
    let c = asked < h.amount ? asked : h.amount;
    const key = a.keys.get(h.facts.key);
    if (h.state === 'open') {
      if (key) {
        key.held -= h.amount;
        key.usage += c;
      }
      a.held -= h.amount;
      a.usage += c;
      h.state = ev.outcome === 'settle' ? 'settled' : 'released';
      h.closed = true;
      h.charge = c;
      this.untrack(h);
      return { result: h.state, charged: c, late: false };
    }
    // Expired: nothing is reserved any more, so the charge is taken only if it still fits, like a new hold.
    if (c > 0n) {
      const keyFits = key !== undefined && (key.limit === null || key.usage + key.held + c <= key.limit);
      if (keyFits && a.credits - a.usage - a.held >= c) {
        key.usage += c;
        a.usage += c;
      } else c = 0n;
    }
    h.closed = true;
    h.charge = c;
    return { result: c > 0n ? 'late_charged' : 'late_dropped', charged: c, late: true };
  }

  /** checkpoint_hold's rule: an open hold keeps its highest checkpoint; false when this one was not kept. */
  checkpoint(h: MemHold, ev: HoldCheckpoint): boolean {
    if (h.state !== 'open') return false;
    if (h.checkpoint && BigInt(h.checkpoint.charge_nano) > BigInt(ev.charge_nano)) return false;
    h.checkpoint = ev;
    return true;
  }

  /** expire_holds' rule for every open hold past its expiry; returns them. */
  expireDue(now: number): MemHold[] {
    const due: MemHold[] = [];
    for (const h of this.openHolds()) if (h.expiresAt < now) due.push(h);
    for (const h of due) {
      const a = this.accounts.get(h.facts.account);
      const key = a?.keys.get(h.facts.key);
      if (key) key.held -= h.amount;
      if (a) a.held -= h.amount;
      h.state = 'expired';
      h.charge = 0n;
      this.untrack(h);
    }
    return due;
  }

  /** A closed hold whose last record the tables now hold leaves memory; an expired one stays for a late settle. */
  forgetIfDone(h: MemHold, appliedSeq: number): void {
    if (h.closed && h.lastSeq <= appliedSeq && this.holds.get(h.facts.id) === h) this.holds.delete(h.facts.id);
  }

  private track(h: MemHold): void {
    this.holds.set(h.facts.id, h);
    if (h.state !== 'open') return;
    this.openByRequest.set(pair(h.facts.account, h.facts.request), h);
    if (h.idem !== null) this.openByIdem.set(pair(h.facts.account, h.idem), h);
  }

  private untrack(h: MemHold): void {
    this.finished.add(h.facts.account, h.facts.request, Date.now());
    this.openByRequest.delete(pair(h.facts.account, h.facts.request));
    if (h.idem !== null) this.openByIdem.delete(pair(h.facts.account, h.idem));
  }
}
