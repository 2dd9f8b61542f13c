import type { MeterResult, RateMeter } from './port';
import { checkArgs, toResult, windowStart } from './result';

export interface MemoryMeterOptions {
  /** The clock, in ms; injectable so tests can cross window boundaries without waiting. */
  now?: () => number;
  /** How often (by that clock) finished windows are swept out. Default 60000 ms. */
  pruneEveryMs?: number;
}

export interface MemoryMeter extends RateMeter {
  /** Accounts currently tracked; exposed so the sweep can be watched (tests, metrics). */
  readonly accounts: number;
}

interface Window {
  start: number;
  windowMs: number;
  count: number;
}

/**
 * Fixed windows aligned to multiples of the window length, one per account and only the current one: an account's
 * entry is overwritten when its window rolls over, so the sweep only has to drop accounts that went quiet.
 */
export function createMemoryMeter(opts: MemoryMeterOptions = {}): MemoryMeter {
  const now = opts.now ?? Date.now;
  const pruneEveryMs = opts.pruneEveryMs ?? 60_000;
  const windows = new Map<string, Window>();
  let nextPrune = now() + pruneEveryMs;

  function prune(t: number): void {
    for (const [account, w] of windows) if (w.start + w.windowMs <= t) windows.delete(account);
  }

  return {
    get accounts() {
      return windows.size;
    },

    async hit(accountId, limit, windowMs): Promise<MeterResult> {
      checkArgs(accountId, limit, windowMs);
      const t = now();
      if (t >= nextPrune) {
        prune(t);
        nextPrune = t + pruneEveryMs;
      }
      const start = windowStart(t, windowMs);
      let w = windows.get(accountId);
      if (!w || w.start !== start || w.windowMs !== windowMs) {
        w = { start, windowMs, count: 0 };
        windows.set(accountId, w);
      }
      w.count++; // refused hits count too: hammering past the limit must not earn an earlier refill
      return toResult(w.count, limit, start + windowMs, t);
    },

    async close() {
      windows.clear();
    },
  };
}
