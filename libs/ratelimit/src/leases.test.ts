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

/** A fake clock with its timers, and meters on one shared counter driven by it. */
function rig(processes = 1, leaseMs = 50) {
  let clock = T0;
  let timers: { at: number; fn: () => void }[] = [];
  const counter = sharedCounter(() => clock);
  /** While set, the counter refuses every take with it, as a Redis that went away. */
  let down: Error | undefined;
  const take: TakeNumbers = (...args) => (down ? Promise.reject(down) : counter.take(...args));
  const schedule = (fn: () => void, ms: number) => {
    const timer = { at: clock + ms, fn };
    timers.push(timer);
    return () => {
      timers = timers.filter((t) => t !== timer);
    };
  };
  const meters = Array.from({ length: processes }, () => leasedHits(take, { prefix: 'rl:', now: () => clock, leaseMs, schedule }));
  return {
    counter,
    meters,
    take,
    setDown(err: Error | undefined) {
      down = err;
    },
    now: () => clock,
    /** Moves the clock on, runs the timers then due, and lets what they started finish. */
    async advance(ms: number) {
      clock += ms;
      for (;;) {
        const due = timers.filter((t) => t.at <= clock);
        if (due.length === 0) break;
        timers = timers.filter((t) => t.at > clock);
        for (const t of due) t.fn();
        for (let i = 0; i < 5; i++) await Promise.resolve();
      }
    },
  };
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
        const r = rig();
        await r.advance(1_234);
        const hits: { at: number; limit: number }[] = [];
        const got = [];
        for (const gap of steps) {
          await r.advance(gap);
          hits.push({ at: r.now(), limit });
          got.push(await r.meters[0].hit('acct', limit, WINDOW));
        }
        expect(got).toEqual(exactAnswers(hits));
      }),
      { numRuns: 200 },
    );
  });

  it('gives concurrent hits of one process each its own number, as INCR would, in one take when the account is busy', async () => {
    await fc.assert(
      fc.asyncProperty(limits, fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 30 }), async (limit, bursts) => {
        const r = rig();
        let total = 0;
        const remaining: number[] = [];
        for (const n of bursts) {
          await r.advance(1);
          total += n;
          for (const a of await Promise.all(Array.from({ length: n }, () => r.meters[0].hit('acct', limit, WINDOW)))) remaining.push(a.remaining);
        }
        const exact = Array.from({ length: total }, (_, i) => Math.max(0, limit - (i + 1)));
        expect(remaining.sort((a, b) => b - a)).toEqual(exact);
      }),
      { numRuns: 200 },
    );
  });

  const turns = fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 40 }), fc.integer({ min: 0, max: 80 })), {
    minLength: 1,
    maxLength: 120,
  });

  /** Four processes on one account, each turn one of them with `n` hits at once after `gap` (plus `pause`) ms. */
  async function takeTurns(limit: number, steps: [number, number, number][], pause: number) {
    const r = rig(4);
    let passed = 0;
    let hits = 0;
    for (const [who, n, gap] of steps) {
      await r.advance(pause + gap);
      hits += n;
      const answers = await Promise.all(Array.from({ length: n }, () => r.meters[who].hit('acct', limit, WINDOW)));
      passed += answers.filter((a) => a.allowed).length;
    }
    return { passed, hits };
  }

  it('never lets several processes pass more than the limit in a window, and loses at most the ranges out at once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 200, max: 5_000 }), turns, async (limit, steps) => {
        const { passed, hits } = await takeTurns(limit, steps, 0);
        expect(passed).toBeLessThanOrEqual(limit);
        // What the other three can hold unused at once: their ranges, each at most the cap.
        expect(passed).toBeGreaterThanOrEqual(Math.min(hits, limit) - 3 * leaseCap(limit));
      }),
      { numRuns: 300 },
    );
  });

  it('is exact across processes when their turns are a lease apart: every range out is given back in between', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 200, max: 5_000 }), turns, async (limit, steps) => {
        const { passed, hits } = await takeTurns(limit, steps, 50);
        expect(passed).toBe(Math.min(hits, limit));
      }),
      { numRuns: 300 },
    );
  });

  it('takes a round trip or two per lease from a busy account, and one number per hit from a slow one', async () => {
    const r = rig();
    for (let i = 0; i < 2_000; i++) {
      await r.advance(1); // a call a millisecond
      await r.meters[0].hit('busy', 100_000_000, WINDOW);
    }
    expect(r.counter.takes()).toBeLessThan(2_000 / 20); // a range, and a give-back when one outlasts its lease
    await r.advance(100); // the busy account's last range given back
    const before = r.counter.takes();
    for (let i = 0; i < 20; i++) {
      await r.advance(200); // slower than a lease lasts
      await r.meters[0].hit('slow', 100_000_000, WINDOW);
    }
    expect(r.counter.takes() - before).toBe(20);
  });

  it('takes no range in the last fifth of the limit: one number per hit there, concurrently', async () => {
    const r = rig();
    const limit = 10_000; // ranges of at most 100; the end game starts 2,000 before the limit
    for (let i = 0; i < 7_900; i++) {
      await r.advance(0.005);
      await r.meters[0].hit('acct', limit, WINDOW);
    }
    const before = r.counter.takes();
    const answers = await Promise.all(Array.from({ length: 2_200 }, () => r.meters[0].hit('acct', limit, WINDOW)));
    expect(r.counter.takes() - before).toBeGreaterThan(2_000);
    expect(answers.filter((a) => a.allowed)).toHaveLength(2_100);
  });

  it('fails closed: a range is not used past leaseMs, so a hit then needs the shared counter', async () => {
    const r = rig();
    // No give-back: the range keeps its numbers, and only its age stops it.
    const hit = leasedHits(r.take, { prefix: 'rl:', now: r.now, leaseMs: 50, schedule: () => () => {} });
    for (let i = 0; i < 100; i++) {
      await r.advance(1);
      await hit.hit('acct', 100_000_000, WINDOW);
    }
    r.setDown(new Error('ECONNREFUSED'));
    await r.advance(51);
    await expect(hit.hit('acct', 100_000_000, WINDOW)).rejects.toThrow('ECONNREFUSED');
    r.setDown(undefined);
    expect((await hit.hit('acct', 100_000_000, WINDOW)).remaining).toBe(100_000_000 - 101);
  });

  it('fails closed at once when the connection to the counter is known down, however fresh the range', async () => {
    const r = rig();
    let connected = true;
    const hit = leasedHits(r.take, { prefix: 'rl:', now: r.now, leaseMs: 50, reachable: () => connected });
    for (let i = 0; i < 100; i++) await hit.hit('acct', 100_000_000, WINDOW); // a range with numbers left, taken just now
    connected = false;
    r.setDown(new Error('Connection is closed.'));
    await expect(hit.hit('acct', 100_000_000, WINDOW)).rejects.toThrow('Connection is closed.');
  });

  it('takes no range ahead with leaseMs 0, nor below 200 requests per window', async () => {
    const r = rig();
    const off = leasedHits(r.counter.take, { prefix: 'rl:', now: r.now, leaseMs: 0 });
    for (let i = 0; i < 50; i++) {
      await r.advance(1);
      await off.hit('a', 100_000, WINDOW);
      await r.meters[0].hit('b', 199, WINDOW);
    }
    expect(r.counter.takes()).toBe(100);
  });
});
