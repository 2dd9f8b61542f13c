import { MAX_RETRY_DELAY_MS, retryDelayMs } from './backoff';

describe('retry backoff', () => {
  const low = () => 0;
  const mid = () => 0.5;
  const high = () => 0.999_999;

  it('doubles from initial_backoff_ms, the first retry waiting about initial_backoff_ms', () => {
    expect([1, 2, 3, 4, 5].map((k) => retryDelayMs(k, 30_000, mid))).toEqual([30_000, 60_000, 120_000, 240_000, 480_000]);
  });

  it('stays within ×0.8 to ×1.2 of the doubled base', () => {
    for (const k of [1, 2, 3, 6]) {
      const base = 1000 * 2 ** (k - 1);
      expect(retryDelayMs(k, 1000, low)).toBe(0.8 * base);
      expect(retryDelayMs(k, 1000, high)).toBeLessThanOrEqual(1.2 * base);
      expect(retryDelayMs(k, 1000, high)).toBeGreaterThan(1.19 * base);
      for (let i = 0; i < 200; i++) {
        const d = retryDelayMs(k, 1000);
        expect(d).toBeGreaterThanOrEqual(0.8 * base);
        expect(d).toBeLessThanOrEqual(1.2 * base);
      }
    }
  });

  it('never waits more than a day, however many retries', () => {
    expect(retryDelayMs(40, 30_000, high)).toBe(MAX_RETRY_DELAY_MS);
    expect(retryDelayMs(10_000, 30_000, low)).toBe(MAX_RETRY_DELAY_MS);
  });

  it('refuses a retry number below 1', () => {
    expect(() => retryDelayMs(0, 1000)).toThrow(RangeError);
  });
});
