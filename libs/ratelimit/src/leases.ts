import type { MeterResult } from './port';
import { toResult, windowStart } from './result';

/**
 * Adds `delta` (which may be negative: unused numbers given back) to a window's shared counter and answers its new
 * value and the milliseconds left on its expiry. `size` is the lease being taken: a counter found below it lost its
 * data (Redis restarted empty), and the implementation then sets it to `size`.
 */
export type TakeNumbers = (key: string, delta: number, size: number, ttlMs: number) => Promise<[count: number, pttlMs: number]>;

export interface LeaseOptions {
  /** Key prefix; keys are `<prefix>{<account>}:<windowStart>`. */
  prefix: string;
  now: () => number;
  /** How long numbers taken ahead stay usable. 0: none are taken ahead (one round trip per hit). */
  leaseMs: number;
  /**
   * Whether the shared counter is reachable as far as this process knows (its connection is up). While it is not, no
   * range is used: a hit needs the counter, and so fails closed at once, not only once the range's lease is over.
   */
  reachable?: () => boolean;
  /** Runs `fn` after `ms` and answers how to cancel it; a real, unref'd timer unless a test drives its own clock. */
  schedule?: (fn: () => void, ms: number) => () => void;
}

const realTimer = (fn: () => void, ms: number) => {
  const timer = setTimeout(fn, ms);
  timer.unref();
  return () => clearTimeout(timer);
};

/**
 * The largest lease for a limit: a hundredth of it, at most 1,024. Below 200 requests per window it is 1, and the
 * meter then counts every hit in the shared counter as it comes, exactly as without leases.
 */
export const leaseCap = (limit: number) => Math.min(1_024, Math.max(1, Math.floor(limit / 100)));

/**
 * Ranges stop this many largest ranges short of the limit (a fifth of it): from there on every hit takes its own
 * number, so the end of a window is counted exactly however many processes meter the account.
 */
const ENDGAME_LEASES = 20;

interface Account {
  id: string;
  key: string;
  start: number;
  windowMs: number;
  /** The next number this process gives out, and the last of its current range (next > end: none left). */
  next: number;
  end: number;
  /** The highest count the shared counter answered this process in this window. */
  seen: number;
  /** When the range was taken and when it stops being usable. */
  takenAt: number;
  usableUntil: number;
  resetAtMs: number;
  /** The size of the last range asked for: doubled while ranges run out quickly, halved when one expires unused. */
  size: number;
  fetching?: Promise<void>;
  /** Cancels the give-back of a range's unused numbers, due once it stops being usable. */
  cancelGiveBack?: () => void;
}

export interface LeasedHits {
  hit(accountId: string, limit: number, windowMs: number): Promise<MeterResult>;
  /** Stops the give-back timers (what is out on lease then stays counted until its window ends). */
  close(): void;
}

/**
 * A fixed-window meter that takes numbers from the shared counter in ranges: a hit's number is its position in the
 * window ("the 37th request"), which the shared counter hands out with INCR, or here with INCRBY n for the next n
 * hits of this process. Ranges grow only while this process's hits use them up within `leaseMs`, so a quiet
 * account costs one round trip per hit as before, and a busy one about one per `leaseMs`.
 *
 * What a client sees. With one process metering an account, every figure is the exact one. With several (edge
 * replicas), never more than `limit` pass in a window, and fewer only by numbers another process holds unused at
 * that moment: a range is given back as soon as it stops being usable (`leaseMs`), and no range is taken in the last
 * fifth of the window's limit (ENDGAME_LEASES), so a refusal can come early only when an account goes through a
 * fifth of its limit within `leaseMs`; `X-RateLimit-Remaining` reads low by the same numbers. A range is used for at
 * most `leaseMs` after the shared counter answered, and not at all while its connection is known to be down: when
 * Redis goes away the meter fails closed at once, or within `leaseMs` when nothing tells this process (a network that
 * drops packets without closing the connection).
 */
export function leasedHits(take: TakeNumbers, opts: LeaseOptions): LeasedHits {
  const accounts = new Map<string, Account>();
  const schedule = opts.schedule ?? realTimer;
  const reachable = opts.reachable ?? (() => true);
  let sweepAbove = 1_024;

  // Accounts whose window ended are forgotten when the map has doubled since the last sweep: no timer.
  function sweep(t: number): void {
    for (const [id, a] of accounts) if (a.start + a.windowMs <= t && !a.fetching && !a.cancelGiveBack) accounts.delete(id);
    sweepAbove = Math.max(1_024, accounts.size * 2);
  }

  function accountOf(accountId: string, windowMs: number, t: number): Account {
    const start = windowStart(t, windowMs);
    let a = accounts.get(accountId);
    if (!a || a.start !== start || a.windowMs !== windowMs) {
      if (accounts.size >= sweepAbove) sweep(t);
      a = {
        id: accountId,
        key: `${opts.prefix}{${accountId}}:${start}`,
        start,
        windowMs,
        next: 1,
        end: 0,
        seen: 0,
        takenAt: 0,
        usableUntil: 0,
        resetAtMs: 0,
        size: 1,
      };
      accounts.set(accountId, a);
    }
    return a;
  }

  /** What is left of the account's window at `t`: the counter's expiry when this take creates it. */
  const windowLeft = (a: Account, t: number) => Math.max(1, a.start + a.windowMs - t);

  /** Takes exactly one number: below the lease threshold, in the endgame, or with leases off. */
  async function takeOne(a: Account, limit: number, t: number): Promise<MeterResult> {
    const [count, pttl] = await take(a.key, 1, 1, windowLeft(a, t));
    a.seen = Math.max(a.seen, count);
    return toResult(count, limit, t + Math.max(1, pttl), t);
  }

  function fetchRange(a: Account, cap: number, t: number): Promise<void> {
    const leftover = Math.max(0, a.end - a.next + 1);
    let size: number;
    if (leftover > 0) size = a.size >> 1;
    else if (t - a.takenAt < opts.leaseMs) size = a.size * 2;
    else size = a.size;
    size = Math.min(cap, Math.max(1, size));
    a.cancelGiveBack?.();
    a.cancelGiveBack = undefined;
    // The unused numbers of an expired range are the counter's last ones unless another process took numbers
    // since; either way giving them back keeps the count at the hits made plus the numbers out on lease.
    const fetching = take(a.key, size - leftover, size, windowLeft(a, t)).then(
      ([count, pttl]) => {
        const at = opts.now();
        a.next = count - size + 1;
        a.end = count;
        a.seen = Math.max(a.seen, count);
        a.size = size;
        a.takenAt = at;
        a.usableUntil = at + opts.leaseMs;
        a.resetAtMs = at + Math.max(1, pttl);
        a.fetching = undefined;
        a.cancelGiveBack = schedule(() => giveBack(a), opts.leaseMs);
      },
      (err: unknown) => {
        a.fetching = undefined;
        throw err;
      },
    );
    a.fetching = fetching;
    return fetching;
  }

  function giveBack(a: Account): void {
    a.cancelGiveBack = undefined;
    const unused = a.end - a.next + 1;
    if (unused <= 0 || a.fetching || accounts.get(a.id) !== a) return;
    a.end = a.next - 1;
    // A failed give-back leaves those numbers counted until the window ends: fewer passes, never more.
    take(a.key, -unused, 0, windowLeft(a, opts.now())).catch(() => {});
  }

  return {
    async hit(accountId, limit, windowMs) {
      for (;;) {
        const t = opts.now();
        const a = accountOf(accountId, windowMs, t);
        if (a.next <= a.end && t < a.usableUntil && reachable()) return toResult(a.next++, limit, a.resetAtMs, t);
        const cap = leaseCap(limit);
        // No lease for this limit, or the window's end game: the hit takes its own number, concurrently with any
        // other (one round trip each).
        if (opts.leaseMs === 0 || cap === 1 || limit - a.seen < ENDGAME_LEASES * cap) return takeOne(a, limit, t);
        await (a.fetching ?? fetchRange(a, cap, t));
        // The hits that waited for a range take its numbers first, in the order they came, however long it took.
        if (a.next <= a.end) return toResult(a.next++, limit, a.resetAtMs, opts.now());
      }
    },
    close() {
      for (const a of accounts.values()) a.cancelGiveBack?.();
    },
  };
}
