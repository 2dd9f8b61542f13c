import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { createRedisMeter } from './redis';
import type { RateMeter } from './port';
import { REDIS, REDIS_URL, useTestRedis } from '@gateway/testing';

REDIS.describe('redis meter', () => {
  const prefix = `rl-test:${randomUUID().slice(0, 8)}:`;
  const WINDOW_START = Date.UTC(2026, 0, 5, 10, 0, 0);
  let clock: number;
  const testRedis = useTestRedis(Redis, prefix);
  let redis: Redis;
  let meter: RateMeter;
  let n = 0;
  const account = () => `acct-${++n}`;

  beforeEach(() => {
    redis = testRedis();
    clock = WINDOW_START + 7_250;
    // The meter's 1 s command timeout is for the request path; here 200 hits at once on a CI machine at full load
    // once took longer than that (CI of b8a7c14), and what these tests check is the counting, not the latency.
    meter = createRedisMeter(REDIS_URL, { prefix, now: () => clock, redis: { commandTimeout: 10_000 } });
  });
  afterEach(() => meter?.close());

  it('allows up to the limit, refuses past it, and keeps counting refused hits', async () => {
    const a = account();
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await meter.hit(a, 3, 60_000));
    expect(results.map((r) => [r.allowed, r.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
      [false, 0],
    ]);
    expect(await redis.get(`${prefix}{${a}}:${WINDOW_START}`)).toBe('5');
  });

  it('gives exactly `limit` passes to 200 concurrent hits', async () => {
    const a = account();
    const results = await Promise.all(Array.from({ length: 200 }, () => meter.hit(a, 50, 60_000)));
    const allowed = results.filter((r) => r.allowed);
    expect(allowed).toHaveLength(50);
    expect(allowed.map((r) => r.remaining).sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(results.filter((r) => !r.allowed).every((r) => r.remaining === 0)).toBe(true);
    expect(await redis.get(`${prefix}{${a}}:${WINDOW_START}`)).toBe('200');
  });

  it('expires the window key at the window end and reports that as the reset', async () => {
    const a = account();
    const r = await meter.hit(a, 10, 60_000);
    const pttl = await redis.pttl(`${prefix}{${a}}:${WINDOW_START}`);
    expect(pttl).toBeGreaterThan(52_000);
    expect(pttl).toBeLessThanOrEqual(52_750);
    expect(r.resetAt).toBe((WINDOW_START + 60_000) / 1000);
    expect(r.retryAfter).toBe(53);
    // A later hit keeps the first hit's expiry instead of pushing it out.
    clock += 10_000;
    await meter.hit(a, 10, 60_000);
    expect(await redis.pttl(`${prefix}{${a}}:${WINDOW_START}`)).toBeLessThanOrEqual(pttl);
  });

  it('restores a lost expiry rather than locking the account out for good', async () => {
    const a = account();
    await redis.set(`${prefix}{${a}}:${WINDOW_START}`, '7');
    const r = await meter.hit(a, 10, 60_000);
    expect(r).toMatchObject({ allowed: true, remaining: 2 });
    expect(await redis.pttl(`${prefix}{${a}}:${WINDOW_START}`)).toBeGreaterThan(0);
  });

  it('keeps accounts independent and refills in the next aligned window', async () => {
    const [a, b] = [account(), account()];
    await meter.hit(a, 1, 60_000);
    expect((await meter.hit(a, 1, 60_000)).allowed).toBe(false);
    expect((await meter.hit(b, 1, 60_000)).allowed).toBe(true);
    clock = WINDOW_START + 60_000;
    expect(await meter.hit(a, 1, 60_000)).toMatchObject({ allowed: true, remaining: 0, retryAfter: 60 });
  });

  it('takes numbers ahead for a busy account: exact figures from one process, a round trip per range', async () => {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const busy = createRedisMeter(client, { prefix, now: () => clock });
    try {
      await client.ping();
      const sent = jest.spyOn(client, 'sendCommand');
      const a = account();
      const remaining: number[] = [];
      for (let i = 0; i < 1_000; i++) {
        clock += 1; // a call a millisecond, the lease 50 ms
        remaining.push((await busy.hit(a, 1_000_000, 60_000)).remaining);
      }
      expect(remaining).toEqual(Array.from({ length: 1_000 }, (_, i) => 1_000_000 - (i + 1)));
      expect(sent.mock.calls.length).toBeLessThan(40);
      // The counter holds the hits made and the numbers out on lease, never fewer than the hits.
      const counted = Number(await redis.get(`${prefix}{${a}}:${WINDOW_START}`));
      expect(counted).toBeGreaterThanOrEqual(1_000);
      expect(counted).toBeLessThanOrEqual(1_000 + 1_024);
    } finally {
      await busy.close();
      client.disconnect();
    }
  });

  it('never passes more than the limit to two processes metering one account at once', async () => {
    const other = createRedisMeter(REDIS_URL, { prefix, now: () => clock, redis: { commandTimeout: 10_000 } });
    try {
      const a = account();
      let passed = 0;
      for (let turn = 0; turn < 20; turn++) {
        clock += 7;
        const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? meter : other).hit(a, 500, 60_000)));
        passed += answers.filter((r) => r.allowed).length;
      }
      // 800 hits at a limit of 500: each process can hold at most 5 numbers it does not use.
      expect(passed).toBeLessThanOrEqual(500);
      expect(passed).toBeGreaterThanOrEqual(495);
    } finally {
      await other.close();
    }
  });

  it('costs exactly one round trip per hit', async () => {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const shared = createRedisMeter(client, { prefix, now: () => clock });
    try {
      await client.ping(); // connection setup (CLIENT SETNAME, INFO ready check) is not the meter's cost
      const sent = jest.spyOn(client, 'sendCommand');
      const a = account();
      for (let i = 0; i < 3; i++) {
        sent.mockClear();
        await shared.hit(a, 10, 60_000);
        // EVAL the first time on a connection (ioredis then knows the script is cached there), EVALSHA after.
        expect(sent.mock.calls.map(([c]) => (c as { name: string }).name)).toEqual([i === 0 ? 'eval' : 'evalsha']);
      }
      await shared.close();
      expect(client.status).toBe('ready'); // a client passed in belongs to the caller
    } finally {
      client.disconnect();
    }
  });
});
