import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import type { BusEvent, EventBus } from './port';
import type { BusErrorContext } from './errors';
import { createKafkaBus, type KafkaBusOptions } from './kafka';
import { lossySockets } from './testing/lossy-socket';
import { KAFKA, KAFKA_BROKERS, waitFor, within } from '@gateway/testing';

/**
 * The Kafka adapter's failure paths on a real broker (deploy/kafka's in CI): each case here failed before the fix it
 * names. The contract every adapter keeps is bus.contract.itest.ts; the broker's own faults are test-e2e/reliability/kafka-faults.itest.ts.
 */
const RUN = randomUUID().slice(0, 8);
let seq = 0;
const unique = (what: string) => `${what}-${RUN}-${++seq}`;
const event = (key: string, n: number): BusEvent<{ key: string; n: number }> => ({ id: unique('evt'), type: 'test.v1', key, data: { key, n } });

KAFKA.describe('kafka adapter on a real broker', () => {
  const open: EventBus[] = [];
  const errors: { err: unknown; ctx: BusErrorContext }[] = [];
  const bus = (o: KafkaBusOptions = {}) => {
    const b = createKafkaBus(KAFKA_BROKERS, {
      fromBeginning: true,
      createTopics: { numPartitions: 2 },
      // Quick retries and fetches, so a test waits little for what production spreads over seconds.
      retryBaseMs: 10,
      retryCapMs: 50,
      fetchMaxWaitMs: 100,
      onError: (err, ctx) => errors.push({ err, ctx }),
      ...o,
    });
    open.push(b);
    return b;
  };
  const admin = new Kafka({ brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }).admin();

  beforeAll(async () => {
    await within(admin.connect(), 5_000, 'kafka admin connect');
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((b) => b.close()));
    errors.length = 0;
  });
  afterAll(async () => {
    await admin.disconnect();
  });

  /** Every record of a topic, read with a raw client: what is on the broker, duplicates included. */
  async function records(topic: string, until: (values: string[]) => boolean): Promise<string[]> {
    const consumer = new Kafka({ brokers: KAFKA_BROKERS, logLevel: logLevel.NOTHING }).consumer({ groupId: unique('reader'), maxWaitTimeInMs: 100 });
    const values: string[] = [];
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void values.push(message.value?.toString() ?? '') });
    try {
      await waitFor(() => until(values), `records of ${topic}`, 20_000);
    } finally {
      await consumer.disconnect();
    }
    return values;
  }

  it('dead-letters a poison event after maxAttempts attempts (10, more than kafkajs retries) while the other keys flow', async () => {
    const b = bus();
    const topic = unique('holds');
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 2 }] });
    // The poison first, then keys on both partitions: its own partition waits for it, the other one does not.
    const poison = event('poison', 0);
    const later = Array.from({ length: 40 }, (_, i) => event(`acct-${i % 8}`, i));
    for (const e of [poison, ...later]) await b.publish(topic, e);

    const handledAtAttempt: number[] = [];
    const handled: string[] = [];
    let handledAtDeadLetter = -1;
    const dead: BusEvent[] = [];
    await b.subscribe(unique('audit'), [`${topic}.dead-letter`], async (e) => {
      handledAtDeadLetter = handled.length;
      dead.push(e);
    });
    await b.subscribe(unique('billing'), [topic], async (e) => {
      const { key, n } = e.data as { key: string; n: number };
      if (key === 'poison') {
        handledAtAttempt.push(handled.length);
        throw new Error('cannot apply');
      }
      handled.push(`${key}:${n}`);
    });

    await waitFor(() => dead.length === 1 && handled.length === later.length, 'the dead letter and every other event', 30_000);
    expect(dead).toEqual([poison]);
    expect(handledAtAttempt).toHaveLength(10);
    expect(new Set(handled)).toEqual(new Set(later.map((e) => `${e.key}:${(e.data as { n: number }).n}`)));
    expect(handled).toHaveLength(later.length);
    // The first fetch brought both partitions: the other one's events were handled between the poison's attempts.
    expect(handledAtAttempt[1]).toBeGreaterThan(0);
    expect(handledAtDeadLetter).toBeGreaterThan(0);
    expect(errors.filter((x) => x.ctx.action === 'dead-lettered').map((x) => x.ctx.event?.id)).toEqual([poison.id]);
    expect(errors.filter((x) => x.ctx.action === 'will-retry')).toHaveLength(9);
  }, 60_000);

  it('fails its check (the service’s bus dependency) and its consumers’ check (readiness) once the broker refused a group for good', async () => {
    const b = bus({ joinTimeoutMs: 1_000 });
    await b.ping();
    const topic = unique('holds');
    // A claim delay above the broker's group.max.session.timeout.ms (30 min): the join fails, and kafkajs gives up.
    await b.subscribe(unique('billing'), [topic], async () => undefined, { claimIdleMs: 31 * 60_000 });
    await waitFor(() => errors.some((x) => /session timeout/i.test(String(x.err))), 'the consumer to crash', 10_000);
    await expect(b.ping()).rejects.toThrow(/consumer of group billing-.* crashed .* and stopped/);
    // Stopped for good, not away for a while: the process's own fault, which readiness reports.
    expect(() => b.checkConsumers()).toThrow(/consumer of group billing-.* crashed .* and stopped; only a restart of the process runs it again/);
  }, 30_000);

  it('writes an event once when the answer to its produce request is lost and the request is sent again', async () => {
    const lossy = lossySockets();
    const b = bus({ kafka: { socketFactory: lossy.socketFactory } });
    const topic = unique('holds');
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1 }] });
    await b.publish(topic, event('warm-up', 0));
    const lost = lossy.loseNextProduceAnswer();
    const once = event('hold_1', 1);
    await b.publish(topic, once);
    await lost;
    const last = event('hold_1', 2);
    await b.publish(topic, last);

    const values = await records(topic, (v) => v.some((x) => x.includes(last.id)));
    expect(values.filter((v) => v.includes(once.id))).toHaveLength(1);
    expect(values).toHaveLength(3);
  }, 30_000);

  it('splits a backlog into produce requests the broker accepts (max.message.bytes 20000 on the topic)', async () => {
    const topic = unique('holds');
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: '20000' }] }],
    });
    const b = bus({ batch: { maxBytes: 16_000 } });
    // 100 events of 1 KB queued in one turn, as a backlog after a stall goes out: 100 KB in one request before.
    const sent = Array.from({ length: 100 }, (_, i) => ({ ...event(`acct-${i % 5}`, i), data: { pad: 'x'.repeat(1_000) } }));
    await Promise.all(sent.map((e) => b.publish(topic, e)));
    const values = await records(topic, (v) => v.length >= sent.length);
    expect(values).toHaveLength(sent.length);
  }, 30_000);

  it('delivers to two subscriptions of one group that read different topics (the catalogue’s stats and health reports)', async () => {
    const b = bus();
    const [stats, health] = [unique('usage'), unique('health')];
    const seen = { stats: [] as string[], health: [] as string[] };
    const group = unique('catalogue');
    await b.subscribe(group, [stats], async (e) => void seen.stats.push(e.id));
    await b.subscribe(group, [health], async (e) => void seen.health.push(e.id));
    const sent = { stats: Array.from({ length: 6 }, (_, i) => event(`a${i}`, i)), health: Array.from({ length: 6 }, (_, i) => event(`p${i}`, i)) };
    for (const e of sent.stats) await b.publish(stats, e);
    for (const e of sent.health) await b.publish(health, e);

    await waitFor(() => seen.stats.length >= 6 && seen.health.length >= 6, 'both subscriptions to get their topic’s events', 20_000);
    expect(new Set(seen.stats)).toEqual(new Set(sent.stats.map((e) => e.id)));
    expect(new Set(seen.health)).toEqual(new Set(sent.health.map((e) => e.id)));
  }, 30_000);

  it('keeps installations apart by prefix: topics and groups on the cluster carry it, and neither sees the other’s events', async () => {
    const topic = unique('billing.holds');
    const one = bus({ topicPrefix: `gw-${RUN}-one.`, createTopics: { numPartitions: 3 } });
    const two = bus({ topicPrefix: `gw-${RUN}-two.`, createTopics: { numPartitions: 3 } });
    const seen = { one: [] as string[], two: [] as string[] };
    const topics = { one: [] as string[], two: [] as string[] };
    await one.subscribe('billing', [topic], async (e, t) => void (seen.one.push(e.id), topics.one.push(t)));
    await two.subscribe('billing', [topic], async (e, t) => void (seen.two.push(e.id), topics.two.push(t)));
    const a = Array.from({ length: 10 }, (_, i) => event(`k${i}`, i));
    const c = Array.from({ length: 10 }, (_, i) => event(`k${i}`, i));
    for (const e of a) await one.publish(topic, e);
    for (const e of c) await two.publish(topic, e);

    await waitFor(() => seen.one.length >= 10 && seen.two.length >= 10, 'both installations to read their own', 20_000);
    expect(new Set(seen.one)).toEqual(new Set(a.map((e) => e.id)));
    expect(new Set(seen.two)).toEqual(new Set(c.map((e) => e.id)));
    expect(new Set([...topics.one, ...topics.two])).toEqual(new Set([topic]));
    const onCluster = await admin.fetchTopicMetadata({ topics: [`gw-${RUN}-one.${topic}`, `gw-${RUN}-two.${topic}`] });
    expect(onCluster.topics.map((t) => t.partitions.length)).toEqual([3, 3]);
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId);
    expect(groups).toEqual(expect.arrayContaining([`gw-${RUN}-one.billing:${topic}`, `gw-${RUN}-two.billing:${topic}`]));
  }, 60_000);
});
