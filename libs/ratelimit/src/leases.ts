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
}

/**
 * The largest lease for a limit: a hundredth of it, at most 1,024. Below 200 requests per window it is 1, and the
 * meter then counts every hit in the shared counter as it comes, exactly as without leases.
 */
export const leaseCap = (limit: number) => Math.min(1_024, Math.max(1, Math.floor(limit / 100)));

interface Account {
  key: string;
  start: number;
  windowMs: number;
  /** The next number this process gives out, and the last of its current range (next > end: none left). */
  next: number;
  end: number;
  /** When the range was taken and when it stops being usable. */
  takenAt: number;
  usableUntil: number;
  resetAtMs: number;
  /** The size of the last range asked for: doubled while ranges run out quickly, halved when one expires unused. */
  size: number;
  fetching?: Promise<void>;
}

/**
 * A fixed-window meter that takes numbers from the shared counter in ranges: a hit's number is its position in the
 * window ("the 37th request"), which the shared counter hands out with INCR, or here with INCRBY n for the next n
 * hits of this process. Ranges grow only while this process's hits use them up within `leaseMs`, so a quiet
 * account costs one round trip per hit as before, and a busy one about one per `leaseMs`.
 *
 * What a client sees: with one process metering an account, every figure is the exact one (a range that expires
 * unused is given back by the next take, so the numbers continue). With several (edge replicas), an account can
 * get up to the others' unused numbers fewer than `limit` in a window, and `X-RateLimit-Remaining` reads that much
 * low; never more than `limit` passes. A range is used for at most `leaseMs` after the shared counter answered, so
 * when Redis goes away the meter fails closed within that time.
 */
export function leasedHits(take: TakeNumbers, opts: LeaseOptions): (accountId: string, limit: number, windowMs: number) => Promise<MeterResult> {
  const accounts = new Map<string, Account>();
  let sweepAbove = 1_024;

  // Accounts whose window ended are forgotten when the map has doubled since the last sweep: no timer.
  function sweep(t: number): void {
    for (const [id, a] of accounts) if (a.start + a.windowMs <= t && !a.fetching) accounts.delete(id);
    sweepAbove = Math.max(1_024, accounts.size * 2);
  }

  function accountOf(accountId: string, windowMs: number, t: number): Account {
    const start = windowStart(t, windowMs);
    let a = accounts.get(accountId);
    if (!a || a.start !== start || a.windowMs !== windowMs) {
      if (accounts.size >= sweepAbove) sweep(t);
      a = { key: `${opts.prefix}{${accountId}}:${start}`, start, windowMs, next: 1, end: 0, takenAt: 0, usableUntil: 0, resetAtMs: 0, size: 1 };
      accounts.set(accountId, a);
    }
    return a;
  }

  function fetchRange(a: Account, limit: number, t: number): Promise<void> {
    const leftover = Math.max(0, a.end - a.next + 1);
    const cap = leaseCap(limit);
    let size: number;
    if (leftover > 0) size = a.size >> 1;
    else if (t - a.takenAt < opts.leaseMs) size = a.size * 2;
    else size = a.size;
    size = Math.min(cap, Math.max(1, size));
    const ttlMs = Math.max(1, a.start + a.windowMs - t);
    // The unused numbers of an expired range are the counter's last ones unless another process took numbers
    // since; either way giving them back keeps the count at the hits made plus the numbers out on lease.
    const fetching = take(a.key, size - leftover, size, ttlMs).then(
      ([count, pttl]) => {
        const at = opts.now();
        a.next = count - size + 1;
        a.end = count;
        a.size = size;
        a.takenAt = at;
        a.usableUntil = at + opts.leaseMs;
        a.resetAtMs = at + Math.max(1, pttl);
        a.fetching = undefined;
      },
      (err: unknown) => {
        a.fetching = undefined;
        throw err;
      },
    );
    a.fetching = fetching;
    return fetching;
  }

  return async function hit(accountId, limit, windowMs) {
    for (;;) {
      const t = opts.now();
      const a = accountOf(accountId, windowMs, t);
      if (a.next <= a.end && t < a.usableUntil) return toResult(a.next++, limit, a.resetAtMs, t);
      if (opts.leaseMs === 0 || leaseCap(limit) === 1) {
        // No lease for this limit: the hit takes its own number, concurrently with any other (one round trip each).
        const [count, pttl] = await take(a.key, 1, 1, Math.max(1, a.start + a.windowMs - t));
        return toResult(count, limit, t + Math.max(1, pttl), t);
      }
      await (a.fetching ?? fetchRange(a, limit, t));
      // The hits that waited for a range take its numbers first, in the order they came, however long it took.
      if (a.next <= a.end) return toResult(a.next++, limit, a.resetAtMs, opts.now());
    }
  };
}
