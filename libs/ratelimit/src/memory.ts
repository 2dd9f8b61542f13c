import type { MeterResult, RateMeter } from './port';

/** Fixed windows aligned to multiples of the window length, so every key of an account shares one count. */
export function createMemoryMeter(now: () => number = Date.now): RateMeter {
  const windows = new Map<string, { start: number; count: number }>();
  let lastPrune = now();
  return {
    async hit(accountId, limit, windowMs): Promise<MeterResult> {
      const t = now();
      const start = Math.floor(t / windowMs) * windowMs;
      const key = `${accountId}:${windowMs}`;
      let w = windows.get(key);
      if (!w || w.start !== start) {
        w = { start, count: 0 };
        windows.set(key, w);
      }
      w.count += 1; // refused requests count too
      if (t - lastPrune > 60_000) {
        lastPrune = t;
        for (const [k, v] of windows) if (v.start + 3_600_000 < t) windows.delete(k);
      }
      return result(w.count, limit, start + windowMs, t);
    },
    async close() {
      windows.clear();
    },
  };
}

export function result(count: number, limit: number, resetAtMs: number, now: number): MeterResult {
  return {
    allowed: count <= limit,
    limit,
    remaining: Math.max(0, limit - count),
    resetAt: Math.ceil(resetAtMs / 1000),
    retryAfter: Math.max(1, Math.ceil((resetAtMs - now) / 1000)),
  };
}
