import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type { BusEvent, EventBus, Handler } from './port';
import type { BusErrorContext } from './errors';
import { createMemoryBus } from './memory';
import { createRedisBus } from './redis-streams';
import { createKafkaBus } from './kafka';
import { KAFKA, KAFKA_BROKERS, REDIS, REDIS_URL, connectTestRedis, deleteKeysUnder, describeOrSkip, pause, waitFor, within } from '@gateway/testing';

const RUN = randomUUID().slice(0, 8);
const REDIS_PREFIX = `bus-test:${RUN}:`;

interface Adapter {
  name: string;
  /** Why this adapter's suite cannot run here; it is then listed as skipped with this reason. */
  skipReason: string | undefined;
  make(o: { closeTimeoutMs: number; onError: (err: unknown, ctx: BusErrorContext) => void }): EventBus;
  /** Claim delay used by the dead-consumer test; Kafka's broker enforces a 6 s minimum session timeout. */
  claimIdleMs: number;
  /** Whether two members of one group are guaranteed to each get a share and never the same event. */
  exclusiveSplit: boolean;
  /** Scales waits for adapters with slow group joins. */
  slow: number;
  cleanup?(): Promise<void>;
}

const adapters: Adapter[] = [
  {
    name: 'memory',
    skipReason: undefined,
    make: (o) => createMemoryBus({ ...o, retryBaseMs: 5 }),
    claimIdleMs: 300,
    exclusiveSplit: true,
    slow: 1,
  },
  {
    name: 'redis',
    skipReason: REDIS.skipReason(),
    make: (o) =>
      createRedisBus(REDIS_URL, { ...o, prefix: REDIS_PREFIX, retryBaseMs: 10, redis: { maxRetriesPerRequest: 1, connectTimeout: 2_000 } }),
    claimIdleMs: 300,
    exclusiveSplit: true,
    slow: 1,
    async cleanup() {
      const r = await connectTestRedis(Redis);
      try {
        await deleteKeysUnder(r, REDIS_PREFIX);
      } finally {
        r.disconnect();
      }
    },
  },
  {
    name: 'kafka',
    // deploy/kafka's single-node KRaft broker in CI (.ci/run starts it); kafka*.test.ts cover what needs none.
    skipReason: KAFKA.skipReason(),
    // Retries and idle fetches quicker than production's, as the Redis adapter's retryBaseMs is; the session timeout
    // (claimIdleMs) stays at the broker's 6 s minimum, and group joins take what they take.
    make: (o) =>
      createKafkaBus(KAFKA_BROKERS, { ...o, fromBeginning: true, createTopics: { numPartitions: 2 }, retryBaseMs: 10, fetchMaxWaitMs: 200 }),
    claimIdleMs: 6_000,
    // Partitions, not events, are split in Kafka, and a rebalance may replay uncommitted offsets.
    exclusiveSplit: false,
    slow: 6,
  },
];

let seq = 0;
const unique = (what: string) => `${what}-${RUN}-${++seq}`;

function makeEvent(key: string, n: number): BusEvent<{ n: number; key: string; note: string }> {
  return {
    id: unique('evt'),
    type: 'test.happened.v1',
    key,
    data: { n, key, note: `payload ${n} ünïcødé` },
    headers: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
  };
}

describe.each(adapters)('$name bus contract', (adapter) => {
  describeOrSkip(adapter.name, adapter.skipReason, () => {
    const open: EventBus[] = [];
    const errors: { err: unknown; ctx: BusErrorContext }[] = [];
    const bus = (closeTimeoutMs = 5_000) => {
      const b = adapter.make({ closeTimeoutMs, onError: (err, ctx) => errors.push({ err, ctx }) });
      open.push(b);
      return b;
    };
    const T = (ms: number) => ms * adapter.slow;

    beforeAll(async () => {
      // Under CI this is where an absent Redis fails the suite (the probe never skips there).
      const probe = bus();
      await within(probe.ping(), 3_000, `${adapter.name} bus ping`);
    });

    afterEach(async () => {
      await Promise.all(open.splice(0).map((b) => b.close()));
      errors.length = 0;
    });

    afterAll(async () => {
      await Promise.all(open.splice(0).map((b) => b.close()));
      await adapter.cleanup?.();
    });

    function recorder() {
      const got: { event: BusEvent; topic: string }[] = [];
      const handler: Handler = async (event, topic) => {
        got.push({ event, topic });
      };
      return { got, handler };
    }

    it('delivers every published event, with its contents intact', async () => {
      const b = bus();
      const topic = unique('topic');
      const { got, handler } = recorder();
      await b.subscribe(unique('group'), [topic], handler);
      const sent = Array.from({ length: 60 }, (_, i) => makeEvent(`acct-${i % 7}`, i));
      for (const e of sent) await b.publish(topic, e);

      await waitFor(() => new Set(got.map((g) => g.event.id)).size === sent.length, 'all events', T(5_000));
      const byId = new Map(got.map((g) => [g.event.id, g]));
      for (const e of sent) {
        expect(byId.get(e.id)?.event).toEqual(e);
        expect(byId.get(e.id)?.topic).toBe(topic);
      }
    });

    it('gives every event to each of two consumer groups', async () => {
      const b = bus();
      const topic = unique('topic');
      const one = recorder();
      const two = recorder();
      await b.subscribe(unique('group-a'), [topic], one.handler);
      await b.subscribe(unique('group-b'), [topic], two.handler);
      const sent = Array.from({ length: 40 }, (_, i) => makeEvent(`acct-${i % 5}`, i));
      await Promise.all(sent.map((e) => b.publish(topic, e)));

      const ids = sent.map((e) => e.id).sort();
      await waitFor(() => new Set(one.got.map((g) => g.event.id)).size === 40, 'group A to get all', T(5_000));
      await waitFor(() => new Set(two.got.map((g) => g.event.id)).size === 40, 'group B to get all', T(5_000));
      expect([...new Set(one.got.map((g) => g.event.id))].sort()).toEqual(ids);
      expect([...new Set(two.got.map((g) => g.event.id))].sort()).toEqual(ids);
    });

    it('splits the events of one group between its two consumers', async () => {
      const b = bus();
      const topic = unique('topic');
      const group = unique('group');
      const seen: Record<'x' | 'y', string[]> = { x: [], y: [] };
      let running = 0;
      const slowly =
        (who: 'x' | 'y'): Handler =>
        async (e) => {
          running++;
          seen[who].push(e.id);
          await pause(5);
          running--;
        };
      await b.subscribe(group, [topic], slowly('x'), { consumer: unique('x') });
      await b.subscribe(group, [topic], slowly('y'), { consumer: unique('y') });
      const sent = Array.from({ length: 60 }, (_, i) => makeEvent(`acct-${i % 20}`, i));
      for (const e of sent) await b.publish(topic, e);

      const all = () => [...seen.x, ...seen.y];
      // With every event seen and no handler running, nothing is in flight that could come back as a duplicate.
      await waitFor(() => new Set(all()).size === sent.length && running === 0, 'the group to handle all events', T(8_000));
      expect(new Set(all())).toEqual(new Set(sent.map((e) => e.id)));
      if (adapter.exclusiveSplit) {
        expect(all()).toHaveLength(sent.length);
        expect(seen.x.length).toBeGreaterThan(0);
        expect(seen.y.length).toBeGreaterThan(0);
      }
    });

    it('redelivers an unacknowledged event after its consumer dies', async () => {
      const b = bus(100);
      const topic = unique('topic');
      const group = unique('group');
      const stuck: string[] = [];
      const dying = await b.subscribe(
        group,
        [topic],
        (e) => {
          stuck.push(e.id);
          return new Promise<void>(() => undefined); // never acknowledges
        },
        { consumer: unique('dying'), claimIdleMs: adapter.claimIdleMs },
      );
      const event = makeEvent('acct-dead', 1);
      await b.publish(topic, event);
      await waitFor(() => stuck.length === 1, 'the first consumer to take the event', T(5_000));
      await dying.close();

      const survivor = recorder();
      await b.subscribe(group, [topic], survivor.handler, { consumer: unique('survivor'), claimIdleMs: adapter.claimIdleMs });
      await waitFor(() => survivor.got.length >= 1, 'redelivery to the surviving consumer', T(5_000) + adapter.claimIdleMs);
      expect(stuck).toEqual([event.id]);
      expect(survivor.got[0].event).toEqual(event);
    }, 30_000);

    it('hands an event whose handler threw to the handler again', async () => {
      const b = bus();
      const topic = unique('topic');
      const calls = new Map<string, number>();
      const done = new Set<string>();
      await b.subscribe(unique('group'), [topic], async (e) => {
        const n = (calls.get(e.id) ?? 0) + 1;
        calls.set(e.id, n);
        if (n === 1) throw new Error(`flaky on ${e.id}`);
        done.add(e.id);
      });
      const sent = Array.from({ length: 5 }, (_, i) => makeEvent(`acct-${i}`, i));
      for (const e of sent) await b.publish(topic, e);

      await waitFor(() => done.size === sent.length, 'every event to succeed on a later attempt', T(8_000));
      for (const e of sent) expect(calls.get(e.id)).toBeGreaterThanOrEqual(2);
      expect(errors.filter((x) => x.ctx.action === 'dropped' || x.ctx.action === 'dead-lettered')).toEqual([]);
    }, 30_000);

    it("stops a key's run at its first failure: the key's later events wait until the failed one is handled", async () => {
      const b = bus();
      const topic = unique('topic');
      const order: string[] = [];
      // More failures than any adapter retries in place (Redis: 3 attempts), so the event leaves its first round unhandled.
      let failuresLeft = 4;
      await b.subscribe(
        unique('group'),
        [topic],
        async (e) => {
          const { key, n } = e.data as { key: string; n: number };
          if (key === 'hold_1' && n === 1 && failuresLeft > 0) {
            failuresLeft--;
            throw new Error('storage blip');
          }
          order.push(`${key}:${n}`);
        },
        { claimIdleMs: adapter.claimIdleMs },
      );
      for (let n = 1; n <= 3; n++) {
        await b.publish(topic, makeEvent('hold_1', n));
        await b.publish(topic, makeEvent('hold_2', n));
      }

      await waitFor(() => new Set(order).size === 6, 'all six events handled', T(10_000));
      expect(failuresLeft).toBe(0);
      expect(order.filter((o) => o.startsWith('hold_1:'))).toEqual(['hold_1:1', 'hold_1:2', 'hold_1:3']);
      expect(order.filter((o) => o.startsWith('hold_2:'))).toEqual(['hold_2:1', 'hold_2:2', 'hold_2:3']);
      expect(errors.filter((x) => x.ctx.action === 'dropped' || x.ctx.action === 'dead-lettered')).toEqual([]);
    }, 30_000);

    it('retries a failing handler until it succeeds: an event is never dropped for a failure that outlasts a few attempts', async () => {
      const b = bus();
      const topic = unique('topic');
      let firstFailure: number | undefined;
      let calls = 0;
      const handled: BusEvent[] = [];
      await b.subscribe(
        unique('group'),
        [topic],
        async (e) => {
          calls++;
          firstFailure ??= Date.now();
          // A storage outage of 600 ms: the in-memory bus dropped the event after 5 attempts (75 ms at this base).
          if (Date.now() - firstFailure < 600) throw new Error('storage down');
          handled.push(e);
        },
        { claimIdleMs: adapter.claimIdleMs },
      );
      const event = makeEvent('hold_9', 1);
      await b.publish(topic, event);

      await waitFor(() => handled.length === 1, 'the event handled once storage is back', T(10_000));
      expect(handled).toEqual([event]);
      expect(calls).toBeGreaterThan(1);
      expect(errors.filter((x) => x.ctx.action === 'dropped' || x.ctx.action === 'dead-lettered')).toEqual([]);
    }, 30_000);

    it('keeps the events of each key in publish order', async () => {
      const b = bus();
      const topic = unique('topic');
      const order: Record<string, number[]> = {};
      await b.subscribe(unique('group'), [topic], async (e) => {
        const { key, n } = e.data as { key: string; n: number };
        // Uneven handler times would reorder a key's events if the adapter ran them concurrently.
        await pause(n % 3);
        (order[key] ??= []).push(n);
      });
      const sent: BusEvent[] = [];
      for (let n = 0; n < 50; n++) sent.push(makeEvent('A', n), makeEvent('B', n));
      for (const e of sent) await b.publish(topic, e);

      await waitFor(() => (order.A?.length ?? 0) + (order.B?.length ?? 0) >= 100, 'all 100 events', T(10_000));
      const expected = Array.from({ length: 50 }, (_, n) => n);
      expect(order.A).toEqual(expected);
      expect(order.B).toEqual(expected);
    }, 30_000);
  });
});
