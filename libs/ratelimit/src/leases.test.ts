import fc from 'fast-check';
import { type TakeNumbers, leaseCap, leasedHits } from './leases';
import { toResult, windowStart } from './result';

const WINDOW = 60_000;
const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);

/** Redis's side of the meter, as the Lua script does it: one shared counter per key, expiring at the window end. */
function sharedCounter(now: () => number) {
  const keys = new Map<string, { count: number; expireAt: number }>();
  let takes = 0;
  const take: TakeNumbers = async (key, delta, size, ttlMs) => {
    takes++;
    await Promise.resolve(); // the round trip: other hits run meanwhile
    let k = keys.get(key);
    if (!k || k.expireAt <= now()) k = { count: 0, expireAt: Number.POSITIVE_INFINITY };
    k.count += delta;
    if (k.count < size) k.count = size;
    if (k.expireAt === Number.POSITIVE_INFINITY) k.expireAt = now() + ttlMs;
    keys.set(key, k);
    return [k.count, k.expireAt - now()];
  };
  return { take, takes: () => takes };
}

/** What the meter answered before leases: INCR per hit, so the nth hit of a window is told about n. */
function exactAnswers(hits: { at: number; limit: number }[]) {
  const counts = new Map<number, number>();
  return hits.map(({ at, limit }) => {
    const start = windowStart(at, WINDOW);
    const n = (counts.get(start) ?? 0) + 1;
    counts.set(start, n);
    return toResult(n, limit, start + WINDOW, at);
  });
}

const limits = fc.constantFrom(3, 150, 250, 1_000, 20_000, 100_000_000);
/** Gaps between hits: mostly within a lease, sometimes past it, sometimes into the next window. */
const gaps = fc.array(fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 120 }), fc.integer({ min: 0, max: 70_000 })), {
  minLength: 1,
  maxLength: 400,
});

describe('leased meter', () => {
  it('gives one process exactly the answers of one INCR per hit, whatever the pace and the limit', async () => {
    await fc.assert(
      fc.asyncProperty(limits, gaps, async (limit, steps) => {
        let clock = T0 + 1_234;
        const counter = sharedCounter(() => clock);
        const hit = leasedHits(counter.take, { prefix: 'rl:', now: () => clock, leaseMs: 50 });
        const hits: { at: number; limit: number }[] = [];
        const got = [];
        for (const gap of steps) {
          clock += gap;
          hits.push({ at: clock, limit });
          got.push(await hit('acct', limit, WINDOW));
        }
        expect(got).toEqual(exactAnswers(hits));
      }),
      { numRuns: 200 },
    );
  });

  it('gives concurrent hits of one process each its own number, as INCR would, in one take when the account is busy', async () => {
    await fc.assert(
      fc.asyncProperty(limits, fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 30 }), async (limit, bursts) => {
        let clock = T0;
        const counter = sharedCounter(() => clock);
        const hit = leasedHits(counter.take, { prefix: 'rl:', now: () => clock, leaseMs: 50 });
        let total = 0;
        const remaining: number[] = [];
        for (const n of bursts) {
          clock += 1;
          total += n;
          for (const r of await Promise.all(Array.from({ length: n }, () => hit('acct', limit, WINDOW)))) remaining.push(r.remaining);
        }
        const exact = Array.from({ length: total }, (_, i) => Math.max(0, limit - (i + 1)));
        expect(remaining.sort((a, b) => b - a)).toEqual(exact);
      }),
      { numRuns: 200 },
    );
  });

  it('never lets several processes pass more than the limit in a window, and loses at most their ranges', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 200, max: 5_000 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 80 })), {
          minLength: 1,
          maxLength: 120,
        }),
        async (limit, turns) => {
          let clock = T0;
          const counter = sharedCounter(() => clock);
          const replicas = Array.from({ length: 4 }, () => leasedHits(counter.take, { prefix: 'rl:', now: () => clock, leaseMs: 50 }));
          let passed = 0;
          let hits = 0;
          for (const [replica, n, gap] of turns) {
            clock += gap;
            hits += n;
            const answers = await Promise.all(Array.from({ length: n }, () => replicas[replica](`acct`, limit, WINDOW)));
            passed += answers.filter((a) => a.allowed).length;
          }
          expect(passed).toBeLessThanOrEqual(limit);
          // What the other three can hold unused at once: their ranges, each at most the cap.
          expect(passed).toBeGreaterThanOrEqual(Math.min(hits, limit) - 3 * leaseCap(limit));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('takes about one range per lease from a busy account, and one number per hit from a slow one', async () => {
    let clock = T0;
    const counter = sharedCounter(() => clock);
    const hit = leasedHits(counter.take, { prefix: 'rl:', now: () => clock, leaseMs: 50 });
    for (let i = 0; i < 2_000; i++) {
      clock += 1; // a call a millisecond
      await hit('busy', 100_000_000, WINDOW);
    }
    expect(counter.takes()).toBeLessThan(2_000 / 25);
    const before = counter.takes();
    for (let i = 0; i < 20; i++) {
      clock += 200; // slower than a lease lasts
      await hit('slow', 100_000_000, WINDOW);
    }
    expect(counter.takes() - before).toBe(20);
  });

  it('fails closed: a range is not used past leaseMs, so a hit then needs the shared counter', async () => {
    let clock = T0;
    let up = true;
    const counter = sharedCounter(() => clock);
    const take: TakeNumbers = (...args) => (up ? counter.take(...args) : Promise.reject(new Error('ECONNREFUSED')));
    const hit = leasedHits(take, { prefix: 'rl:', now: () => clock, leaseMs: 50 });
    for (let i = 0; i < 100; i++) {
      clock += 1;
      await hit('acct', 100_000_000, WINDOW);
    }
    up = false;
    clock += 51;
    await expect(hit('acct', 100_000_000, WINDOW)).rejects.toThrow('ECONNREFUSED');
    up = true;
    expect((await hit('acct', 100_000_000, WINDOW)).remaining).toBe(100_000_000 - 101);
  });

  it('takes no range ahead with leaseMs 0, nor below 200 requests per window', async () => {
    let clock = T0;
    const counter = sharedCounter(() => clock);
    const off = leasedHits(counter.take, { prefix: 'rl:', now: () => clock, leaseMs: 0 });
    const on = leasedHits(counter.take, { prefix: 'rl:', now: () => clock, leaseMs: 50 });
    for (let i = 0; i < 50; i++) {
      clock += 1;
      await off('a', 100_000, WINDOW);
      await on('b', 199, WINDOW);
    }
    expect(counter.takes()).toBe(100);
  });
});
