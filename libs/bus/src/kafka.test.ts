import { Partitioners } from 'kafkajs';
import { trace } from '@opentelemetry/api';
import type { BusEvent, EventBus, Handler } from './port';
import type { BusErrorContext } from './errors';
import { GATHER_FETCH_BYTES, PARTITIONS_SIDE_BY_SIDE, kafkaBusOn, type KafkaBusOptions } from './kafka';
import { LINGER_BELOW } from './kafka-consumer';
import { HEADER, toKafkaMessage } from './kafka-codec';
import { withTracing } from './tracing';
import { FakeKafka } from './testing/fake-kafka';
import { useInMemoryTracing } from './testing/otel';

/** The Kafka adapter's own decisions, over a fake kafkajs client: no broker can run where the unit tests do. */
describe('kafka bus over a fake kafkajs client', () => {
  let kafka: FakeKafka;
  let bus: EventBus;
  let opened: EventBus[] = [];
  let errors: { err: unknown; ctx: BusErrorContext }[];
  let n = 0;
  const ev = (key = 'hold_1'): BusEvent => ({
    id: `evt-${++n}`,
    type: 'hold.close.v1',
    key,
    data: { n },
    headers: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
  });
  const open = (opts: Omit<KafkaBusOptions, 'clientId' | 'kafka' | 'onError'> = {}, fake = new FakeKafka()) => {
    kafka = fake;
    bus = kafkaBusOn(kafka, { retryBaseMs: 1, retryCapMs: 1, ...opts, onError: (err, ctx) => errors.push({ err, ctx }) });
    opened.push(bus);
    return bus;
  };
  /** Subscribes and returns the consumer the adapter made for it. */
  const subscribe = async (handler: Handler, group = 'billing', claimIdleMs?: number) => {
    const made = kafka.nextConsumer();
    await bus.subscribe(group, ['billing.holds'], handler, claimIdleMs === undefined ? {} : { claimIdleMs });
    return made;
  };
  const actions = () => errors.map((e) => e.ctx.action);

  beforeEach(() => {
    errors = [];
    open();
  });
  afterEach(async () => {
    await Promise.all(opened.map((b) => b.close()));
    opened = [];
  });

  describe('publishing', () => {
    it('sends each event as one message keyed by the event key, acknowledged by all in-sync replicas', async () => {
      const e = ev('hold_9');
      await bus.publish('billing.holds', e);
      expect(kafka.batches).toHaveLength(1);
      expect(kafka.batches[0].acks).toBe(-1);
      expect(kafka.sent).toEqual([{ topic: 'billing.holds', message: toKafkaMessage(e) }]);
    });

    it('is idempotent, with kafkajs’s default partitioner and one request in flight, so a retry neither repeats nor reorders', () => {
      expect(kafka.producerConfig).toEqual({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
    });

    it('connects the producer once, on the first publish', async () => {
      expect(kafka.producerConnects).toBe(0);
      await bus.publish('billing.holds', ev());
      await bus.publish('billing.holds', ev());
      expect(kafka.producerConnects).toBe(1);
    });

    it('fails the publish when the broker refuses the batch', async () => {
      kafka.failNextSend = new Error('NOT_ENOUGH_REPLICAS');
      await expect(bus.publish('billing.holds', ev())).rejects.toThrow('NOT_ENOUGH_REPLICAS');
    });

    it('refuses malformed events before they reach the client', async () => {
      await expect(bus.publish('billing.holds', { ...ev(), id: '' })).rejects.toThrow(/id/);
      expect(kafka.batches).toEqual([]);
    });

    it('sends what was published before close(), then refuses to publish', async () => {
      const pending = bus.publish('billing.holds', ev());
      await bus.close();
      await pending;
      expect(kafka.sent).toHaveLength(1);
      expect(kafka.producerConnected).toBe(false);
      await expect(bus.publish('billing.holds', ev())).rejects.toThrow(/closed/);
    });
  });

  describe('consuming', () => {
    it('lets kafkajs commit a message once its handler succeeded, having called it once with the event', async () => {
      const got: BusEvent[] = [];
      const consumer = await subscribe(async (e) => void got.push(e));
      const e = ev();
      expect(await consumer.deliver('billing.holds', toKafkaMessage(e))).toEqual({ deliveries: 1, committed: true });
      expect(got).toEqual([e]);
      expect(errors).toEqual([]);
    });

    it('has a failed message redelivered, uncommitted, reporting each failure as will-retry, until the handler succeeds', async () => {
      let calls = 0;
      const consumer = await subscribe(async () => {
        if (++calls < 3) throw new Error('ledger busy');
      });
      expect(await consumer.deliver('billing.holds', toKafkaMessage(ev()))).toEqual({ deliveries: 3, committed: true });
      expect(actions()).toEqual(['will-retry', 'will-retry']);
      expect(kafka.sent).toEqual([]);
    });

    it('dead-letters a message after maxAttempts failures, with the reason, and then lets it be committed', async () => {
      open({ maxAttempts: 3 });
      const consumer = await subscribe(async () => {
        throw new Error('ledger says no');
      });
      const e = ev('hold_7');
      const message = toKafkaMessage(e);
      expect(await consumer.deliver('billing.holds', message)).toEqual({ deliveries: 3, committed: true });
      expect(actions()).toEqual(['will-retry', 'will-retry', 'dead-lettered']);
      expect(errors[2].ctx).toMatchObject({ topic: 'billing.holds', group: 'billing', event: e });
      expect(kafka.sent).toEqual([
        {
          topic: 'billing.holds.dead-letter',
          message: {
            key: 'hold_7',
            value: message.value,
            headers: { [HEADER.group]: 'billing', [HEADER.error]: 'ledger says no', [HEADER.topic]: 'billing.holds' },
          },
        },
      ]);
    });

    it('dead-letters to the configured topic', async () => {
      open({ maxAttempts: 1, deadLetterTopic: (t) => `dlq.${t}` });
      const consumer = await subscribe(async () => {
        throw new Error('no');
      });
      await consumer.deliver('billing.holds', toKafkaMessage(ev()));
      expect(kafka.sent.map((s) => s.topic)).toEqual(['dlq.billing.holds']);
    });

    it('keeps a message uncommitted when its dead letter cannot be sent, so it is not lost', async () => {
      open({ maxAttempts: 1 });
      const consumer = await subscribe(async () => {
        throw new Error('no');
      });
      kafka.failNextSend = new Error('broker gone');
      const message = toKafkaMessage(ev());
      expect(await consumer.deliver('billing.holds', message, { times: 1, offset: '5' })).toEqual({ deliveries: 1, committed: false });
      expect(await consumer.deliver('billing.holds', message, { times: 1, offset: '5' })).toEqual({ deliveries: 1, committed: true });
      expect(kafka.sent.map((s) => s.topic)).toEqual(['billing.holds.dead-letter']);
    });

    it('dead-letters a message that is not an event at once, keyless, with its original text, never calling the handler', async () => {
      let calls = 0;
      const consumer = await subscribe(async () => void calls++);
      expect(await consumer.deliver('billing.holds', { key: 'k', value: '{"half": "an event"' })).toEqual({ deliveries: 1, committed: true });
      expect(calls).toBe(0);
      expect(actions()).toEqual(['dead-lettered']);
      expect(kafka.sent).toEqual([
        { topic: 'billing.holds.dead-letter', message: expect.objectContaining({ key: null, value: '{"half": "an event"' }) },
      ]);
    });

    it('counts failures per message offset, not per event id', async () => {
      open({ maxAttempts: 2 });
      const consumer = await subscribe(async () => {
        throw new Error('no');
      });
      const message = toKafkaMessage(ev());
      // The same event at two offsets (a producer retry wrote it twice): each offset gets its own attempts.
      expect(await consumer.deliver('billing.holds', message, { times: 1, offset: '1' })).toEqual({ deliveries: 1, committed: false });
      expect(await consumer.deliver('billing.holds', message, { times: 1, offset: '2' })).toEqual({ deliveries: 1, committed: false });
      expect(actions()).toEqual(['will-retry', 'will-retry']);
    });

    it('keeps counting a message’s failures across a rejoin that leaves its partition here (kafkajs rejoins after a crash)', async () => {
      open({ maxAttempts: 3 });
      let calls = 0;
      const consumer = await subscribe(async () => {
        calls++;
        throw new Error('no');
      });
      const message = toKafkaMessage(ev());
      const once = { times: 1, offset: '40' };
      expect(await consumer.deliver('billing.holds', message, once)).toEqual({ deliveries: 1, committed: false });
      consumer.joinGroup({ 'billing.holds': [0] });
      expect(await consumer.deliver('billing.holds', message, once)).toEqual({ deliveries: 1, committed: false });
      consumer.joinGroup({ 'billing.holds': [0, 1] });
      expect(await consumer.deliver('billing.holds', message, once)).toEqual({ deliveries: 1, committed: true });
      expect(calls).toBe(3);
      expect(actions()).toEqual(['will-retry', 'will-retry', 'dead-lettered']);
    });

    it('forgets the counts of a partition a rejoin gave to another member', async () => {
      open({ maxAttempts: 2 });
      const consumer = await subscribe(async () => {
        throw new Error('no');
      });
      const message = toKafkaMessage(ev());
      const once = { times: 1, offset: '40' };
      expect(await consumer.deliver('billing.holds', message, once)).toEqual({ deliveries: 1, committed: false });
      consumer.joinGroup({ 'billing.holds': [1] });
      consumer.joinGroup({ 'billing.holds': [0, 1] });
      expect(await consumer.deliver('billing.holds', message, once)).toEqual({ deliveries: 1, committed: false });
      expect(await consumer.deliver('billing.holds', message, once)).toEqual({ deliveries: 1, committed: true });
      expect(actions()).toEqual(['will-retry', 'will-retry', 'dead-lettered']);
    });

    it('after a dead letter that could not be sent, sends it on the next attempt without calling the handler again', async () => {
      open({ maxAttempts: 2 });
      let calls = 0;
      const consumer = await subscribe(async () => {
        calls++;
        throw new Error('ledger says no');
      });
      kafka.failNextSend = new Error('broker gone');
      const message = toKafkaMessage(ev());
      expect(await consumer.deliver('billing.holds', message, { times: 2, offset: '3' })).toEqual({ deliveries: 2, committed: false });
      expect(await consumer.deliver('billing.holds', message, { times: 1, offset: '3' })).toEqual({ deliveries: 1, committed: true });
      expect(calls).toBe(2);
      expect(kafka.sent.map((s) => [s.topic, s.message.headers?.[HEADER.error]])).toEqual([['billing.holds.dead-letter', 'ledger says no']]);
    });

    it('pauses only the failing message’s partition, and resumes it after the backoff', async () => {
      let calls = 0;
      const consumer = await subscribe(async () => {
        if (++calls === 1) throw new Error('blip');
      });
      // deliver() fetches the message again only once the adapter resumed the partition it paused.
      expect(await consumer.deliver('billing.holds', toKafkaMessage(ev()), { times: 2 })).toEqual({ deliveries: 2, committed: true });
      expect(consumer.pauses).toBe(1);
    });

    it('runs the keys of a fetched batch side by side, each key’s messages in order, and commits the batch once all are handled', async () => {
      const started: string[] = [];
      let releaseFirst!: () => void;
      const firstHeld = new Promise<void>((r) => (releaseFirst = r));
      const consumer = await subscribe(async (e) => {
        started.push(e.id);
        if (started.length === 1) await firstHeld;
      });
      const [a1, b1, a2, b2] = [ev('hold_a'), ev('hold_b'), ev('hold_a'), ev('hold_b')];
      const delivery = consumer.deliverBatch('billing.holds', [a1, b1, a2, b2].map(toKafkaMessage));
      await new Promise((r) => setImmediate(r));
      // hold_a's first settle is still running: hold_b's two went ahead, hold_a's second waits behind its first.
      expect(started).toEqual([a1.id, b1.id, b2.id]);
      releaseFirst();
      expect(await delivery).toEqual({ fetches: [['0', '1', '2', '3']], committed: '3' });
      expect(started).toEqual([a1.id, b1.id, b2.id, a2.id]);
    });

    it('after a key fails, commits only what precedes it, and the refetch handles that key on without repeating the others', async () => {
      const calls: string[] = [];
      let failed = false;
      const consumer = await subscribe(async (e) => {
        calls.push(e.id);
        if (e.key === 'hold_a' && !failed) {
          failed = true;
          throw new Error('ledger busy');
        }
      });
      const [b1, a1, b2, a2, c1] = [ev('hold_b'), ev('hold_a'), ev('hold_b'), ev('hold_a'), ev('hold_c')];
      const delivery = await consumer.deliverBatch('billing.holds', [b1, a1, b2, a2, c1].map(toKafkaMessage));
      expect(delivery).toEqual({
        fetches: [
          ['0', '1', '2', '3', '4'],
          ['1', '2', '3', '4'],
        ],
        committed: '4',
      });
      expect(consumer.pauses).toBe(1);
      expect(calls.filter((id) => id === a1.id)).toHaveLength(2);
      for (const once of [b1, b2, a2, c1]) expect(calls.filter((id) => id === once.id)).toHaveLength(1);
      expect(calls.indexOf(a2.id)).toBeGreaterThan(calls.lastIndexOf(a1.id));
      expect(actions()).toEqual(['will-retry']);
    });

    it('stops every key when a heartbeat fails (a rebalance), resolves what was handled, and throws to kafkajs', async () => {
      const handled: string[] = [];
      let consumer!: Awaited<ReturnType<typeof subscribe>>;
      consumer = await subscribe(async (e) => {
        handled.push(e.id);
        if (handled.length === 1) consumer.heartbeatError = new Error('The group is rebalancing');
      });
      const [a1, a2, a3] = [ev('hold_a'), ev('hold_a'), ev('hold_a')];
      const delivery = await consumer.deliverBatch('billing.holds', [a1, a2, a3].map(toKafkaMessage));
      expect(delivery).toEqual({ fetches: [['0', '1', '2']], committed: '0', thrown: new Error('The group is rebalancing') });
      expect(handled).toEqual([a1.id]);
    });

    it('dead-letters a poison message without holding up the other keys of its batch', async () => {
      open({ maxAttempts: 2 });
      const handled: string[] = [];
      const consumer = await subscribe(async (e) => {
        if (e.key === 'hold_bad') throw new Error('ledger says no');
        handled.push(e.id);
      });
      const [bad, ok1, ok2] = [ev('hold_bad'), ev('hold_ok'), ev('hold_ok')];
      expect(await consumer.deliverBatch('billing.holds', [bad, ok1, ok2].map(toKafkaMessage))).toEqual({
        fetches: [
          ['0', '1', '2'],
          ['0', '1', '2'],
        ],
        committed: '2',
      });
      expect(handled).toEqual([ok1.id, ok2.id]);
      expect(kafka.sent.map((s) => s.topic)).toEqual(['billing.holds.dead-letter']);
    });

    it('hands the handler the topic the message came from', async () => {
      const topics: string[] = [];
      const consumer = await subscribe(async (_, topic) => void topics.push(topic));
      await consumer.deliver('billing.holds', toKafkaMessage(ev()));
      expect(topics).toEqual(['billing.holds']);
    });

    it('reports a consumer crash instead of dying silently', async () => {
      const consumer = await subscribe(async () => undefined);
      consumer.crash(new Error('coordinator lost'));
      expect(errors).toEqual([{ err: new Error('coordinator lost'), ctx: { adapter: 'kafka', action: 'none', group: 'billing' } }]);
    });

    it('fails its check while a consumer that crashed is restarting, and passes again once it rejoined', async () => {
      const consumer = await subscribe(async () => undefined);
      await expect(bus.ping()).resolves.toBeUndefined();
      consumer.crash(new Error('coordinator lost'));
      await expect(bus.ping()).rejects.toThrow('bus: the kafka consumer of group billing crashed (coordinator lost), restarting');
      consumer.joinGroup();
      await expect(bus.ping()).resolves.toBeUndefined();
    });

    it('keeps its consumers alive (the process ready) while one that crashed is restarting, however often', async () => {
      const consumer = await subscribe(async () => undefined);
      for (let i = 0; i < 3; i++) consumer.crash(new Error('connection refused'));
      expect(() => bus.checkConsumers()).not.toThrow();
    });

    it('names a consumer kafkajs crashed for good in its consumers’ check (the process not ready)', async () => {
      const consumer = await subscribe(async () => undefined);
      consumer.crash(new Error('not authorized'), false);
      expect(() => bus.checkConsumers()).toThrow(
        'bus: the kafka consumer of group billing crashed (not authorized) and stopped; only a restart of the process runs it again',
      );
    });

    it('fails its check once a consumer crashed for good (kafkajs does not restart it)', async () => {
      const consumer = await subscribe(async () => undefined);
      consumer.crash(new Error('not authorized'), false);
      await expect(bus.ping()).rejects.toThrow('bus: the kafka consumer of group billing crashed (not authorized) and stopped');
    });

    it('fails its check while a consumer has not joined its group yet', async () => {
      open({ joinTimeoutMs: 1 }, new FakeKafka({ joinOnRun: false }));
      await bus.subscribe('billing', ['billing.holds'], async () => undefined);
      await expect(bus.ping()).rejects.toThrow('bus: the kafka consumer of group billing has not joined its group yet');
    });
  });

  describe('subscribing', () => {
    it('joins the group named by the subscription, on its topics, from the tail unless told otherwise', async () => {
      const consumer = await subscribe(async () => undefined, 'audit');
      expect(consumer.config).toEqual({ groupId: 'audit:billing.holds', maxWaitTimeInMs: 1_000 });
      expect(consumer.subscription).toEqual({ topics: ['billing.holds'], fromBeginning: false });
      open({ fromBeginning: true });
      expect((await subscribe(async () => undefined)).subscription).toEqual({ topics: ['billing.holds'], fromBeginning: true });
    });

    it('a gathering subscription (gatherMs) lets the broker hold its fetch that long to fill GATHER_FETCH_BYTES', async () => {
      await bus.subscribe('catalogue', ['billing.usage'], async () => undefined, { gatherMs: 250 });
      expect(kafka.consumers[0].config).toEqual({ groupId: 'catalogue:billing.usage', maxWaitTimeInMs: 250, minBytes: GATHER_FETCH_BYTES });
    });

    /** Whether `p` is still unsettled after a few turns of the event loop (no clock involved). */
    const stillPending = async (p: Promise<unknown>) => {
      let settled = false;
      p.then(
        () => (settled = true),
        () => (settled = true),
      );
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      return !settled;
    };

    it('after a thin batch holds the next fetch readLingerMs, its events handled and resolved at once; a full batch fetches again at once', async () => {
      open({ readLingerMs: 600_000 });
      const handled: string[] = [];
      const consumer = await subscribe(async (e) => void handled.push(e.id));
      const thin = consumer.deliverBatch('billing.holds', [toKafkaMessage(ev('hold_a'))]);
      expect(await stillPending(thin)).toBe(true);
      expect(handled).toHaveLength(1);
      const full = await consumer.deliverBatch(
        'billing.holds',
        Array.from({ length: LINGER_BELOW }, (_, i) => toKafkaMessage(ev(`hold_${i}`))),
      );
      expect(full.committed).toBe(String(LINGER_BELOW - 1));
      // Closing ends the wait: a stopping consumer is not held up by it.
      await bus.close();
      expect((await thin).committed).toBe('0');
    });

    it('has kafkajs hand over the partitions of a fetch side by side (partitionsConsumedConcurrently), for one shared wait', async () => {
      const consumer = await subscribe(async () => undefined);
      expect(consumer.runConfig).toMatchObject({ eachBatchAutoResolve: false, partitionsConsumedConcurrently: PARTITIONS_SIDE_BY_SIDE });
    });

    it('does not hold the fetch of a gathering subscription, which the broker already holds', async () => {
      open({ readLingerMs: 600_000 });
      const made = kafka.nextConsumer();
      await bus.subscribe('catalogue', ['billing.usage'], async () => undefined, { gatherMs: 250 });
      const consumer = await made;
      expect((await consumer.deliverBatch('billing.usage', [toKafkaMessage(ev())])).committed).toBe('0');
    });

    it('gives each set of topics of a group its own Kafka group, named by group and topics in any order', async () => {
      await bus.subscribe('catalogue', ['billing.usage', 'billing.accounts'], async () => undefined);
      await bus.subscribe('catalogue', ['spend.endpoint_health'], async () => undefined);
      await bus.subscribe('catalogue', ['billing.accounts', 'billing.usage'], async () => undefined);
      expect(kafka.consumers.map((c) => c.config.groupId)).toEqual([
        'catalogue:billing.accounts,billing.usage',
        'catalogue:spend.endpoint_health',
        'catalogue:billing.accounts,billing.usage',
      ]);
    });

    it('turns the claim delay into the session timeout', async () => {
      const consumer = await subscribe(async () => undefined, 'billing', 20_000);
      expect(consumer.config).toMatchObject({ sessionTimeout: 20_000, heartbeatInterval: 6_666 });
    });

    it('returns only once the group has joined, so nothing published afterwards is skipped', async () => {
      open({}, new FakeKafka({ joinOnRun: false }));
      const made = kafka.nextConsumer();
      let returned = false;
      const subscribing = bus.subscribe('billing', ['billing.holds'], async () => undefined).then(() => (returned = true));
      const consumer = await made;
      await new Promise((r) => setImmediate(r));
      expect(returned).toBe(false);
      consumer.joinGroup();
      await subscribing;
      expect(errors).toEqual([]);
    });

    it('returns and reports when the join takes longer than joinTimeoutMs, leaving the consumer running', async () => {
      open({ joinTimeoutMs: 1 }, new FakeKafka({ joinOnRun: false }));
      await bus.subscribe('billing', ['billing.holds'], async () => undefined);
      expect(errors).toEqual([
        {
          err: new Error('group billing has not joined yet; continuing in the background'),
          ctx: { adapter: 'kafka', action: 'none', group: 'billing' },
        },
      ]);
      expect(kafka.consumers[0].connected).toBe(true);
    });

    it.each(['connect', 'subscribe', 'run'] as const)('disconnects the consumer and fails when %s fails', async (step) => {
      kafka.failConsumersOn = step;
      await expect(bus.subscribe('billing', ['billing.holds'], async () => undefined)).rejects.toThrow(/fake/);
      expect(kafka.consumers).toHaveLength(1);
      expect(kafka.consumers[0].connected).toBe(false);
    });

    it('creates the missing topics it reads, and their dead-letter topics, before joining; 3 partitions unless told', async () => {
      kafka.existingTopics.add('billing.holds');
      await subscribe(async () => undefined);
      expect(kafka.createdTopics).toEqual([{ topic: 'billing.holds.dead-letter', numPartitions: 3 }]);
      open({ createTopics: { numPartitions: 6, replicationFactor: 3 } });
      await subscribe(async () => undefined);
      expect(kafka.createdTopics).toEqual([
        { topic: 'billing.holds', numPartitions: 6, replicationFactor: 3 },
        { topic: 'billing.holds.dead-letter', numPartitions: 6, replicationFactor: 3 },
      ]);
    });

    it('creates a missing topic before its first publish, and looks it up once', async () => {
      await bus.publish('jobs.state', ev());
      await bus.publish('jobs.state', ev());
      expect(kafka.createdTopics).toEqual([{ topic: 'jobs.state', numPartitions: 3 }]);
      expect(kafka.topicLookups).toBe(1);
    });

    it('leaves topics alone when they are the operator’s (createTopics: false)', async () => {
      open({ createTopics: false });
      await subscribe(async () => undefined);
      await bus.publish('billing.holds', ev());
      expect(kafka.createdTopics).toEqual([]);
      expect(kafka.adminConnected).toBe(false);
    });

    it('prefixes the topics and the group on the cluster, and hands the handler the topic without the prefix', async () => {
      open({ topicPrefix: 'gw-eu.', maxAttempts: 1 });
      const topics: string[] = [];
      const consumer = await subscribe(async (_, topic) => {
        topics.push(topic);
        throw new Error('no');
      });
      expect(consumer.config.groupId).toBe('gw-eu.billing:billing.holds');
      expect(consumer.subscription?.topics).toEqual(['gw-eu.billing.holds']);
      await bus.publish('billing.holds', ev());
      await consumer.deliver('gw-eu.billing.holds', kafka.sent[0].message);
      expect(topics).toEqual(['billing.holds']);
      expect(kafka.sent.map((s) => s.topic)).toEqual(['gw-eu.billing.holds', 'gw-eu.billing.holds.dead-letter']);
      expect(kafka.sent[1].message.headers?.[HEADER.topic]).toBe('billing.holds');
      expect(errors.map((e) => e.ctx.topic)).toEqual(['billing.holds']);
      expect(kafka.createdTopics.map((t) => t.topic)).toEqual(['gw-eu.billing.holds', 'gw-eu.billing.holds.dead-letter']);
    });

    it('refuses no topics, and any subscription after close()', async () => {
      await expect(bus.subscribe('billing', [], async () => undefined)).rejects.toThrow(/at least one topic/);
      await bus.close();
      await expect(bus.subscribe('billing', ['billing.holds'], async () => undefined)).rejects.toThrow(/closed/);
    });
  });

  describe('closing', () => {
    it('lets an in-flight handler finish before the consumer disconnects', async () => {
      let finish!: () => void;
      const consumer = await subscribe(() => new Promise<void>((r) => (finish = r)));
      const delivery = consumer.deliver('billing.holds', toKafkaMessage(ev()));
      let closed = false;
      const closing = bus.close().then(() => (closed = true));
      await new Promise((r) => setImmediate(r));
      expect(closed).toBe(false);
      finish();
      await closing;
      expect(await delivery).toEqual({ deliveries: 1, committed: true });
      expect(consumer.connected).toBe(false);
    });

    it('gives up on a stuck handler after closeTimeoutMs instead of hanging shutdown', async () => {
      open({ closeTimeoutMs: 1 });
      const consumer = await subscribe(() => new Promise<void>(() => undefined));
      void consumer.deliver('billing.holds', toKafkaMessage(ev()));
      await bus.close();
      expect(consumer.connected).toBe(true); // still waiting on the handler, abandoned
    });

    it('disconnects the admin client it opened', async () => {
      await bus.ping();
      expect(kafka.clusterDescribed).toBe(1);
      expect(kafka.adminConnected).toBe(true);
      await bus.close();
      expect(kafka.adminConnected).toBe(false);
    });
  });

  describe('with trace context', () => {
    const exporter = useInMemoryTracing();

    it('carries the publisher’s trace through a Kafka message to the consumer’s span', async () => {
      const traced = withTracing(bus);
      const seen: (string | undefined)[] = [];
      const made = kafka.nextConsumer();
      await traced.subscribe('billing', ['billing.holds'], async () => void seen.push(trace.getActiveSpan()?.spanContext().traceId));
      const consumer = await made;
      const publisherTrace = await trace.getTracer('test').startActiveSpan('request', async (span) => {
        await traced.publish('billing.holds', { id: 'e1', type: 'hold.close.v1', key: 'hold_1', data: {} });
        span.end();
        return span.spanContext().traceId;
      });
      const [{ message }] = kafka.sent;
      expect(message.headers?.traceparent).toContain(publisherTrace);
      expect(JSON.parse(message.value as string).headers.traceparent).toBe(message.headers?.traceparent);

      await consumer.deliver('billing.holds', message);
      expect(seen).toEqual([publisherTrace]);
      expect(
        exporter
          .getFinishedSpans()
          .find((s) => s.name === 'billing.holds process')
          ?.spanContext().traceId,
      ).toBe(publisherTrace);
    });
  });
});
