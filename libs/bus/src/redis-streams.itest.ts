import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { BusEvent, EventBus } from './port';
import type { BusErrorContext } from './errors';
import { createRedisBus, type RedisBusOptions } from './redis-streams';
import { REDIS, REDIS_URL, useTestRedis, waitFor } from '@gateway/testing';

/** What only the Redis adapter does: the claim loop, dead-lettering, trimming, and its housekeeping. */
REDIS.describe('redis streams bus', () => {
  const prefix = `bus-test:${randomUUID().slice(0, 8)}:`;
  const testRedis = useTestRedis(Redis, prefix);
  let redis: Redis;
  let buses: EventBus[] = [];
  let errors: { err: unknown; ctx: BusErrorContext }[] = [];
  let n = 0;
  const ev = (key = 'acct'): BusEvent => ({ id: `id-${++n}`, type: 'x.v1', key, data: { n } });
  const unique = (s: string) => `${s}-${++n}`;
  const open = (o: RedisBusOptions = {}) => {
    const b = createRedisBus(REDIS_URL, { prefix, retryBaseMs: 5, onError: (err, ctx) => errors.push({ err, ctx }), ...o });
    buses.push(b);
    return b;
  };
  const pendingCount = async (topic: string, group: string) => Number(((await redis.xpending(prefix + topic, group)) as unknown[])[0]);
  /** Acks are pipelined after the handlers ran, so "handled" comes before "acknowledged": wait for the latter. */
  const allAcknowledged = (topic: string, group: string) =>
    waitFor(async () => (await pendingCount(topic, group)) === 0, `no pending entries in ${group}`);
  /** Publishes 20 events of one key, 5 ms apart: a trickle, each event alone unless a reader waits for more. */
  const trickle = async (bus: EventBus, topic: string): Promise<number[]> => {
    const sent: number[] = [];
    for (let i = 0; i < 20; i++) {
      const e = ev('k');
      sent.push((e.data as { n: number }).n);
      await bus.publish(topic, e);
      await new Promise((r) => setTimeout(r, 5));
    }
    return sent;
  };
  /**
   * Counts each group's XREADGROUPs from now on, as this process's clients send them, until `stop`. MONITOR, which
   * saw them at the server, broke ioredis's reply queue in CI: other suites' commands arrived with MONITOR's OK.
   */
  const countReads = (...groups: string[]) => {
    const spy = jest.spyOn(Redis.prototype, 'xreadgroup');
    const reads = () => Object.fromEntries(groups.map((g) => [g, spy.mock.calls.filter((args) => (args as unknown[]).includes(g)).length]));
    return { reads, stop: () => spy.mockRestore() };
  };
  const ownedBy = async (topic: string, group: string, consumer: string) =>
    ((await redis.xpending(prefix + topic, group, '-', '+', 100, consumer)) as unknown[]).length;
  /** CLIENT LIST marks a connection blocked in a command with flag b, and names its last command. */
  const blockedInRead = async (connectionName: string) =>
    String(await redis.client('LIST'))
      .split('\n')
      .some((line) => line.includes(` name=${connectionName} `) && /\bflags=\w*b/.test(line) && line.includes(' cmd=xreadgroup'));

  beforeEach(() => {
    redis = testRedis();
  });
  afterEach(async () => {
    await Promise.all(buses.map((b) => b.close()));
    buses = [];
    errors = [];
  });

  it('acknowledges handled messages, leaving nothing pending', async () => {
    const bus = open();
    const [topic, group] = [unique('t'), unique('g')];
    const got: string[] = [];
    await bus.subscribe(group, [topic], async (e) => void got.push(e.id));
    for (let i = 0; i < 20; i++) await bus.publish(topic, ev());
    await waitFor(() => got.length === 20, '20 deliveries');
    await allAcknowledged(topic, group);
    expect(got).toHaveLength(20);
  });

  it("handles the keys of one read side by side, each key's events in order: a slow key does not hold up the others", async () => {
    const bus = open();
    const [topic, group] = [unique('t'), unique('g')];
    let releaseSlow!: () => void;
    const slowGate = new Promise<void>((r) => (releaseSlow = r));
    const order: string[] = [];
    await bus.subscribe(group, [topic], async (e) => {
      // Waits until the other key has been handled: one event at a time, the read would never get there.
      if (e.key === 'slow' && (e.data as { n: number }).n === first) await slowGate;
      order.push(`${e.key}:${(e.data as { n: number }).n}`);
      if (e.key === 'fast' && order.filter((o) => o.startsWith('fast')).length === 3) releaseSlow();
    });
    const slow = [ev('slow'), ev('slow')];
    const first = (slow[0].data as { n: number }).n;
    const fast = [ev('fast'), ev('fast'), ev('fast')];
    // One MULTI: a blocked XREADGROUP is served after the EXEC, so the five entries arrive in one reply.
    const pipe = redis.multi();
    for (const e of [slow[0], fast[0], slow[1], fast[1], fast[2]]) pipe.xadd(prefix + topic, '*', 'e', JSON.stringify(e));
    await pipe.exec();
    await waitFor(() => order.length === 5, 'five deliveries');
    const of = (key: string) => order.filter((o) => o.startsWith(`${key}:`));
    expect(of('slow')).toEqual(slow.map((e) => `slow:${(e.data as { n: number }).n}`));
    expect(of('fast')).toEqual(fast.map((e) => `fast:${(e.data as { n: number }).n}`));
    expect(order.slice(0, 3).every((o) => o.startsWith('fast:'))).toBe(true);
    await allAcknowledged(topic, group);
  });

  it('under a trickle of events, a read that was not full waits readLingerMs, so a few reads carry them all', async () => {
    const bus = open({ readLingerMs: 400 });
    const [topic, group] = [unique('t'), unique('g')];
    const got: number[] = [];
    await bus.subscribe(group, [topic], async (e) => void got.push((e.data as { n: number }).n));
    const { reads, stop } = countReads(group);
    try {
      const sent = await trickle(bus, topic);
      await waitFor(() => got.length === 20, '20 deliveries');
      expect(got).toEqual(sent);
      // One read per event without the linger (each comes 5 ms after the last); with it: the first event's read,
      // the read after the linger that takes the other 19, and the next read blocking. A slow machine may need one more.
      expect(reads()[group]).toBeLessThanOrEqual(4);
      await allAcknowledged(topic, group);
    } finally {
      stop();
    }
  });

  it("a subscription's gatherMs is its own linger: beside a group that reads at once, it reads a few times", async () => {
    const bus = open({ readLingerMs: 0 });
    const topic = unique('t');
    const [eager, gathering] = [unique('g'), unique('g')];
    const got = { [eager]: [] as number[], [gathering]: [] as number[] };
    await bus.subscribe(eager, [topic], async (e) => void got[eager].push((e.data as { n: number }).n));
    await bus.subscribe(gathering, [topic], async (e) => void got[gathering].push((e.data as { n: number }).n), { gatherMs: 400 });
    const { reads, stop } = countReads(eager, gathering);
    try {
      const sent = await trickle(bus, topic);
      await waitFor(() => got[eager].length === 20 && got[gathering].length === 20, '20 deliveries to each group');
      expect(got).toEqual({ [eager]: sent, [gathering]: sent });
      // Each event comes 5 ms after the last: the eager group reads about once per event, the gathering one as above.
      expect(reads()[gathering]).toBeLessThanOrEqual(4);
      expect(reads()[eager]).toBeGreaterThanOrEqual(10);
      await allAcknowledged(topic, gathering);
    } finally {
      stop();
    }
  });

  it('a new group starts at the tail, unless it asks for the history; an existing group resumes where it stood', async () => {
    const bus = open();
    const topic = unique('t');
    const before = [ev(), ev()];
    for (const e of before) await bus.publish(topic, e);
    const [tailGroup, historyGroup] = [unique('g'), unique('g')];
    const tail: string[] = [];
    const history: string[] = [];
    const tailSub = await bus.subscribe(tailGroup, [topic], async (e) => void tail.push(e.id));
    const historySub = await bus.subscribe(historyGroup, [topic], async (e) => void history.push(e.id), { fromBeginning: true });
    const after = ev();
    await bus.publish(topic, after);
    await waitFor(() => tail.length === 1 && history.length === 3, 'both groups caught up');
    expect(tail).toEqual([after.id]);
    expect(history).toEqual([...before, after].map((e) => e.id));
    await historySub.close();
    await tailSub.close();
    // The history group exists now: subscribing again with fromBeginning does not replay what it acknowledged.
    const again: string[] = [];
    await bus.subscribe(historyGroup, [topic], async (e) => void again.push(e.id), { fromBeginning: true });
    const last = ev();
    await bus.publish(topic, last);
    await waitFor(() => again.length >= 1, 'the resumed group');
    expect(again).toEqual([last.id]);
  });

  it('keeps a message whose handler failed pending, and retries it itself, long before claimIdleMs', async () => {
    const bus = open({ maxAttempts: 1 });
    const [topic, group] = [unique('t'), unique('g')];
    let calls = 0;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    await bus.subscribe(
      group,
      [topic],
      async () => {
        if (++calls === 1) {
          release();
          throw new Error('transient');
        }
      },
      { claimIdleMs: 60_000 },
    );
    await bus.publish(topic, ev());
    await released;
    expect(await pendingCount(topic, group)).toBe(1);
    await waitFor(() => calls === 2, 'the retry of the parked key');
    await allAcknowledged(topic, group);
    expect(errors.map((x) => x.ctx.action)).toEqual(['will-retry']);
  });

  it("while a key waits on its failed event, the key's later events stay pending and other keys run on", async () => {
    const bus = open({ maxAttempts: 1 });
    const [topic, group] = [unique('t'), unique('g')];
    const order: string[] = [];
    let storageUp = false;
    await bus.subscribe(group, [topic], async (e) => {
      if (e.key === 'hold_1' && !storageUp) throw new Error('storage down');
      order.push(`${e.key}:${(e.data as { n: number }).n}`);
    });
    const held = [ev('hold_1'), ev('hold_1'), ev('hold_1')];
    const free = [ev('hold_2'), ev('hold_2')];
    for (const e of [held[0], free[0], held[1], free[1], held[2]]) await bus.publish(topic, e);
    await waitFor(() => order.length === 2, "the other key's events");
    // All three of hold_1 wait, pending, behind the first (the last, published after the other key's, may still be
    // on its way to the consumer when the other key is done).
    await waitFor(async () => (await pendingCount(topic, group)) === 3, "hold_1's three events pending");
    expect(await pendingCount(topic, group)).toBe(3);
    expect(order).toEqual(free.map((e) => `hold_2:${(e.data as { n: number }).n}`));
    storageUp = true;
    await waitFor(() => order.length === 5, 'the parked key, once storage is back');
    expect(order.slice(2)).toEqual(held.map((e) => `hold_1:${(e.data as { n: number }).n}`));
    await allAcknowledged(topic, group);
  });

  it('dead-letters a message that keeps failing, with the reason, and acknowledges it', async () => {
    const bus = open({ maxAttempts: 1, maxDeliveries: 2 });
    const [topic, group] = [unique('t'), unique('g')];
    let calls = 0;
    await bus.subscribe(
      group,
      [topic],
      async () => {
        calls++;
        throw new Error('always broken');
      },
      { claimIdleMs: 150 },
    );
    const poison = ev();
    await bus.publish(topic, poison);
    await waitFor(() => errors.some((x) => x.ctx.action === 'dead-lettered'), 'dead-lettering', 5_000);
    await allAcknowledged(topic, group);
    expect(calls).toBe(2);
    const dead = (await redis.xrange(`${prefix}dead:${topic}`, '-', '+')) as [string, string[]][];
    expect(dead).toHaveLength(1);
    const flat = dead[0][1];
    const fields = Object.fromEntries(flat.filter((_, i) => i % 2 === 0).map((k, i) => [k, flat[2 * i + 1]]));
    expect(JSON.parse(fields.e)).toEqual(poison);
    expect(fields.group).toBe(group);
    expect(fields.error).toMatch(/gave up after 2 deliveries/);
  });

  it('dead-letters a malformed stream entry and keeps consuming', async () => {
    const bus = open();
    const [topic, group] = [unique('t'), unique('g')];
    const got: BusEvent[] = [];
    await bus.subscribe(group, [topic], async (e) => void got.push(e));
    await redis.xadd(prefix + topic, '*', 'e', '{"not":"an event"}');
    const good = ev();
    await bus.publish(topic, good);
    await waitFor(() => got.length === 1 && errors.length === 1, 'the good event and the dead-lettering of the bad one');
    expect(got).toEqual([good]);
    expect(await redis.xlen(`${prefix}dead:${topic}`)).toBe(1);
    expect(errors.map((x) => x.ctx.action)).toEqual(['dead-lettered']);
  });

  it('closes without waiting for a blocked read to time out', async () => {
    const connectionName = unique('blocked-reader');
    // A read blocks for min(blockMs, the claim interval, which is at most 5 s): 5 s here.
    const bus = open({ blockMs: 10_000, redis: { connectionName } });
    const sub = await bus.subscribe(unique('g'), [unique('t')], async () => undefined, { claimIdleMs: 60_000 });
    await waitFor(() => blockedInRead(connectionName), 'the consumer to block in XREADGROUP');
    const started = Date.now();
    await sub.close();
    // Half the block time: far from what waiting the read out would take, far above what a hang-up takes.
    expect(Date.now() - started).toBeLessThan(2_500);
  });

  it('removes its consumer from the group on a clean close, but not one that still owns messages', async () => {
    const bus = open({ closeTimeoutMs: 50 });
    const [topic, group] = [unique('t'), unique('g')];
    const clean = await bus.subscribe(group, [topic], async () => undefined, { consumer: 'clean' });
    await clean.close();
    const stuck = await bus.subscribe(group, [topic], () => new Promise<void>(() => undefined), { consumer: 'stuck' });
    await bus.publish(topic, ev());
    await waitFor(async () => (await ownedBy(topic, group, 'stuck')) === 1, 'the stuck consumer to own the message');
    await stuck.close();
    const consumers = (await redis.xinfo('CONSUMERS', prefix + topic, group)) as unknown[][];
    expect(consumers.map((c) => c[1])).toEqual(['stuck']);
  });

  it("keeps a down group's backlog past maxLen: 2,000 events published while billing's group is away all reach it", async () => {
    const bus = open({ maxLen: 100 });
    const [topic, group] = [unique('t'), 'billing'];
    // The group exists (it read before) and its consumers are gone: billing is down.
    const before = await bus.subscribe(group, [topic], async () => undefined);
    await before.close();
    const sent: string[] = [];
    for (let i = 0; i < 2_000; i++) {
      const e = ev(`hold_${i}`);
      sent.push(e.id);
      await bus.publish(topic, e);
    }
    expect(await redis.xlen(prefix + topic)).toBeGreaterThanOrEqual(2_000);
    const got = new Set<string>();
    await bus.subscribe(group, [topic], async (e) => void got.add(e.id));
    await waitFor(() => got.size === 2_000, 'the whole backlog', 20_000);
    expect([...got].sort()).toEqual([...sent].sort());
    await allAcknowledged(topic, group);
    expect(errors).toEqual([]);
    // Once read by every group, the backlog is trimmed by the next publishes' trim pass.
    for (let i = 0; i < 20; i++) await bus.publish(topic, ev());
    await waitFor(async () => (await redis.xlen(prefix + topic)) < 300, 'the acknowledged backlog to be trimmed');
  }, 30_000);

  it('trims only below the slowest group: a group that read everything does not let the other lose its backlog', async () => {
    const bus = open({ maxLen: 100 });
    const topic = unique('t');
    const fast = new Set<string>();
    await bus.subscribe(unique('fast'), [topic], async (e) => void fast.add(e.id));
    const slowGroup = unique('slow');
    await (await bus.subscribe(slowGroup, [topic], async () => undefined)).close();
    for (let i = 0; i < 500; i++) await bus.publish(topic, ev(`k${i % 7}`));
    await waitFor(() => fast.size === 500, 'the fast group');
    for (let i = 0; i < 50; i++) await bus.publish(topic, ev());
    const slow = new Set<string>();
    await bus.subscribe(slowGroup, [topic], async (e) => void slow.add(e.id));
    await waitFor(() => slow.size === 550, 'the slow group to get all 550', 10_000);
  }, 30_000);

  it('refuses publishes at capLen, loudly, rather than trim what a group has not read', async () => {
    const bus = open({ maxLen: 10, capLen: 50 });
    const [topic, group] = [unique('t'), unique('g')];
    await (await bus.subscribe(group, [topic], async () => undefined)).close();
    const accepted: string[] = [];
    let refused = 0;
    for (let i = 0; i < 120; i++) {
      const e = ev();
      await bus.publish(topic, e).then(
        () => accepted.push(e.id),
        (err: Error) => {
          expect(err.message).toMatch(/at its cap of 50.*publish refused/);
          refused++;
        },
      );
    }
    expect(refused).toBeGreaterThan(0);
    expect(errors.filter((x) => x.ctx.action === 'refused')).toHaveLength(refused);
    // Approximate: a publisher learns the length at each trim pass, every maxLen / 10 publishes.
    expect(accepted.length).toBeLessThanOrEqual(55);
    const got = new Set<string>();
    await bus.subscribe(group, [topic], async (e) => void got.add(e.id));
    await waitFor(() => got.size === accepted.length, 'every accepted event');
    expect([...got].sort()).toEqual([...accepted].sort());
    // Read and acknowledged, the backlog is trimmed, and publishes are taken again.
    await allAcknowledged(topic, group);
    await expect(bus.publish(topic, ev())).resolves.toBeUndefined();
  });

  it('trims a stream no group reads to roughly maxLen', async () => {
    const bus = open({ maxLen: 10 });
    const topic = unique('t');
    await Promise.all(Array.from({ length: 600 }, () => bus.publish(topic, ev())));
    // The trim pass follows the publishes that trigger it.
    await waitFor(async () => (await redis.xlen(prefix + topic)) < 300, 'the stream to be trimmed');
    expect(await redis.xlen(prefix + topic)).toBeGreaterThanOrEqual(10);
  });
});
