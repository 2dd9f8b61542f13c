import { Kafka, Partitioners, logLevel, type Admin, type Consumer, type EachMessagePayload, type KafkaConfig } from 'kafkajs';
import type { BusEvent, EventBus, Handler, SubscribeOptions, Subscription } from './port';
import { assertEvent, decodeEvent, encodeEvent } from './codec';
import { errorMessage, guarded, logBusError, type BusErrorHandler } from './errors';
import { BatchingProducer } from './kafka-producer';
import { settleWithin } from './timing';

export interface KafkaBusOptions {
  clientId?: string;
  /** Extra client settings (ssl, sasl, timeouts); `brokers` and `clientId` come from the arguments above. */
  kafka?: Omit<KafkaConfig, 'brokers' | 'clientId'>;
  /** Where a new group starts. Default false (the tail), as the Redis adapter does. */
  fromBeginning?: boolean;
  /** Create missing topics on subscribe; off by default because production topics belong to infrastructure code. */
  createTopics?: { numPartitions?: number; replicationFactor?: number };
  /** Handler calls per message before it is dead-lettered. Default 10. */
  maxAttempts?: number;
  /** Where given-up messages go. Default `<topic>.dead-letter`. */
  deadLetterTopic?: (topic: string) => string;
  /** How long `close()` waits for in-flight handlers before giving up on them. Default 5000 ms. */
  closeTimeoutMs?: number;
  /** How long `subscribe()` waits for the first group join. Default 30000 ms. */
  joinTimeoutMs?: number;
  onError?: BusErrorHandler;
}

/**
 * Kafka adapter. Keys are the partition key, so one account's events stay in one partition and in order.
 * Offsets are committed only for messages whose handler resolved (kafkajs auto-commit after eachMessage), so a
 * throw or a crash means redelivery, which the port promises.
 */
export function createKafkaBus(brokers: string[], opts: KafkaBusOptions = {}): EventBus {
  if (brokers.length === 0) throw new Error('bus: kafka needs at least one broker');
  const onError = guarded(opts.onError ?? logBusError);
  const maxAttempts = Math.max(1, opts.maxAttempts ?? 10);
  const deadLetterTopic = opts.deadLetterTopic ?? ((topic: string) => `${topic}.dead-letter`);
  const closeTimeoutMs = opts.closeTimeoutMs ?? 5_000;
  const kafka = new Kafka({ logLevel: logLevel.WARN, ...opts.kafka, brokers, clientId: opts.clientId ?? 'gateway-bus' });

  // One request in flight per broker: a retried request can then never overtake a later one for the same key.
  // The Java-compatible partitioner puts a key on the same partition as producers written in other languages would.
  const rawProducer = kafka.producer({ maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
  let producerReady: Promise<void> | undefined;
  const connectProducer = () =>
    (producerReady ??= rawProducer.connect().catch((err) => {
      producerReady = undefined;
      throw err;
    }));
  const producer = new BatchingProducer(rawProducer, connectProducer);

  let admin: Admin | undefined;
  let adminReady: Promise<Admin> | undefined;
  const getAdmin = () =>
    (adminReady ??= (async () => {
      admin = kafka.admin();
      await admin.connect();
      return admin;
    })().catch((err) => {
      adminReady = undefined;
      throw err;
    }));

  const subscriptions = new Set<Subscription>();
  let closed = false;

  function toMessage(event: BusEvent) {
    return {
      key: event.key,
      value: encodeEvent(event),
      headers: { ...event.headers, 'bus-id': event.id, 'bus-type': event.type },
    };
  }

  async function subscribe(group: string, topics: string[], handler: Handler, sub: SubscribeOptions = {}): Promise<Subscription> {
    if (closed) throw new Error('bus: subscribe on a closed kafka bus');
    if (topics.length === 0) throw new Error('bus: subscribe needs at least one topic');
    if (opts.createTopics) {
      const { numPartitions = 3, replicationFactor } = opts.createTopics;
      await (await getAdmin()).createTopics({
        waitForLeaders: true,
        topics: topics.map((topic) => ({ topic, numPartitions, ...(replicationFactor ? { replicationFactor } : {}) })),
      });
    }
    // Kafka's "dead consumer" detection is the session timeout; the broker refuses values under its minimum (6 s by default).
    const sessionTimeout = sub.claimIdleMs === undefined ? undefined : Math.max(6_000, sub.claimIdleMs);
    const consumer = kafka.consumer({
      groupId: group,
      ...(sessionTimeout ? { sessionTimeout, heartbeatInterval: Math.floor(sessionTimeout / 3) } : {}),
    });
    const attempts = new Map<string, number>();
    consumer.on(consumer.events.CRASH, (e) => onError(e.payload.error, { adapter: 'kafka', action: 'none', group }));
    // After a rebalance another member may own those partitions; counts for them would only leak.
    consumer.on(consumer.events.GROUP_JOIN, () => attempts.clear());

    async function eachMessage({ topic, partition, message }: EachMessagePayload): Promise<void> {
      const raw = message.value?.toString('utf8') ?? '';
      let event: BusEvent;
      try {
        event = decodeEvent(raw);
      } catch (err) {
        await deadLetter(topic, raw, err, undefined, group);
        return;
      }
      const where = `${topic}/${partition}/${message.offset}`;
      try {
        await handler(event, topic);
        attempts.delete(where);
      } catch (err) {
        const n = (attempts.get(where) ?? 0) + 1;
        if (n >= maxAttempts) {
          attempts.delete(where);
          await deadLetter(topic, raw, err, event, group);
          return;
        }
        attempts.set(where, n);
        onError(err, { adapter: 'kafka', action: 'will-retry', topic, group, event });
        // Rethrowing makes kafkajs seek back to this offset and retry with backoff instead of committing it.
        throw err;
      }
    }

    const joined = new Promise<void>((resolve) => {
      const off = consumer.on(consumer.events.GROUP_JOIN, () => {
        off();
        resolve();
      });
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: opts.fromBeginning ?? false });
      await consumer.run({ eachMessage });
    } catch (err) {
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
    // Returning before the join would let a caller publish into offsets the group then skips (it starts at the tail).
    if (!(await settleWithin([joined], opts.joinTimeoutMs ?? 30_000))) {
      onError(new Error(`group ${group} has not joined yet; continuing in the background`), { adapter: 'kafka', action: 'none', group });
    }

    let closing: Promise<void> | undefined;
    const subscription: Subscription = {
      close: () =>
        (closing ??= (async () => {
          subscriptions.delete(subscription);
          // disconnect() waits for the running eachMessage; a stuck handler must not hold shutdown hostage.
          await settleWithin([consumer.disconnect()], closeTimeoutMs);
        })()),
    };
    subscriptions.add(subscription);
    return subscription;
  }

  /** The original bytes go along, so a message that failed to decode can still be inspected. */
  async function deadLetter(topic: string, raw: string, err: unknown, event: BusEvent | undefined, group: string): Promise<void> {
    await producer.send(deadLetterTopic(topic), {
      key: event?.key ?? null,
      value: raw,
      headers: { 'bus-group': group, 'bus-error': errorMessage(err), 'bus-topic': topic },
    });
    onError(err, { adapter: 'kafka', action: 'dead-lettered', topic, group, event });
  }

  return {
    kind: 'kafka',

    async publish(topic, event) {
      assertEvent(topic, event);
      if (closed) throw new Error('bus: publish on a closed kafka bus');
      await producer.send(topic, toMessage(event));
    },

    subscribe,

    async ping() {
      await (await getAdmin()).describeCluster();
    },

    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([...subscriptions].map((s) => s.close()));
      await producer.flush();
      await Promise.allSettled([producerReady && rawProducer.disconnect(), admin?.disconnect()]);
    },
  };
}
