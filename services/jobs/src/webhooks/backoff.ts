/** Each delay is the doubled base times a factor drawn uniformly from [1 - JITTER, 1 + JITTER). */
export const JITTER = 0.2;

/**
 * No single wait is longer than a day: with a large `max_retries` the doubling would otherwise push a retry months
 * out (or past what a timestamp holds), long after the receiver or the job's reader has stopped caring.
 */
export const MAX_RETRY_DELAY_MS = 24 * 60 * 60 * 1000;

/**
 * Delay before retry `retry` (1 is the first retry, i.e. the second attempt): initialBackoffMs × 2^(retry-1), times a
 * jitter factor in [0.8, 1.2). The jitter spreads the retries of many deliveries that failed together (a receiver's
 * outage) so they do not all arrive again in the same instant; ±20 % keeps every delay within a predictable band
 * around the documented doubling. `random` is injectable so tests can pin the bounds.
 */
export function retryDelayMs(retry: number, initialBackoffMs: number, random: () => number = Math.random): number {
  if (!Number.isInteger(retry) || retry < 1) throw new RangeError(`retry must be an integer >= 1, got ${retry}`);
  const base = initialBackoffMs * 2 ** Math.min(retry - 1, 52);
  const factor = 1 - JITTER + 2 * JITTER * random();
  return Math.min(MAX_RETRY_DELAY_MS, Math.round(base * factor));
}
