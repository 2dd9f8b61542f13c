import type { MeterResult } from './port';

/** Shared by both meters so a client sees the same headers whichever backend counted. */
export function toResult(count: number, limit: number, resetAtMs: number, now: number): MeterResult {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    // Rounded up: a client that waits until resetAt must land in the new window, never a few ms short of it.
    resetAt: Math.ceil(resetAtMs / 1000),
    retryAfter: Math.max(1, Math.ceil((resetAtMs - now) / 1000)),
  };
}

export function windowStart(now: number, windowMs: number): number {
  return Math.floor(now / windowMs) * windowMs;
}

export function checkArgs(accountId: string, limit: number, windowMs: number): void {
  if (typeof accountId !== 'string' || accountId === '') throw new TypeError('ratelimit: accountId must be a non-empty string');
  if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`ratelimit: limit must be a non-negative integer, got ${limit}`);
  if (!Number.isInteger(windowMs) || windowMs <= 0) throw new RangeError(`ratelimit: windowMs must be a positive integer, got ${windowMs}`);
}
