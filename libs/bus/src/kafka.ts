import { Kafka, Partitioners, logLevel, type KafkaConfig } from 'kafkajs';
import type { EventBus, Handler, SubscribeOptions, Subscription } from './port';
import { assertEvent } from './codec';
import { guarded, logBusError, type BusErrorHandler } from './errors';
import type { KafkaAdmin, KafkaClient } from './kafka-client';
import { consumerConfig, deadLetterMessage, defaultDeadLetterTopic, toKafkaMessage, topicsToCreate, type CreateTopics } from './kafka-codec';
import { messageHandler } from './kafka-consumer';
import { BatchingProducer } from './kafka-producer';
import { settleWithin } from './timing';

export interface KafkaBusOptions {
  clientId?: string;
  /** Extra client settings (ssl, sasl, timeouts); `brokers` and `clientId` come from the arguments above. */
  kafka?: Omit<KafkaConfig, 'brokers' | 'clientId'>;
  /** Where a new group starts. Default false (the tail), as the Redis adapter does. */
  fromBeginning?: boolean;
  /** Create missing topics on subscribe; off by default because production topics belong to infrastructure code. */
  createTopics?: CreateTopics;
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
  return kafkaBusOn(new Kafka({ logLevel: logLevel.WARN, ...opts.kafka, brokers, clientId: opts.clientId ?? 'gateway-bus' }), opts);
}

/** The adapter over any client; `createKafkaBus` is it over a real one. */
export function kafkaBusOn(kafka: KafkaClient, opts: Omit<KafkaBusOptions, 'clientId' | 'kafka'> = {}): EventBus {
  const onError = guarded(opts.onError ?? logBusError);
  const maxAttempts = Math.max(1, opts.maxAttempts ?? 10);
  const deadLetterTopic = opts.deadLetterTopic ?? defaultDeadLetterTopic;
  const closeTimeoutMs = opts.closeTimeoutMs ?? 5_000;

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

  let admin: KafkaAdmin | undefined;
  let adminReady: Promise<KafkaAdmin> | undefined;
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

  async function subscribe(group: string, topics: string[], handler: Handler, sub: SubscribeOptions = {}): Promise<Subscription> {
    if (closed) throw new Error('bus: subscribe on a closed kafka bus');
    if (topics.length === 0) throw new Error('bus: subscribe needs at least one topic');
    if (opts.createTopics) {
      await (await getAdmin()).createTopics({ waitForLeaders: true, topics: topicsToCreate(topics, opts.createTopics) });
    }
    const consumer = kafka.consumer(consumerConfig(group, sub.claimIdleMs));
    const { eachMessage, rebalanced } = messageHandler({
      group,
      handler,
      maxAttempts,
      deadLetter: (d) => producer.send(deadLetterTopic(d.topic), deadLetterMessage(d)),
      onError,
    });
    consumer.on(consumer.events.CRASH, (e) => onError(e.payload.error, { adapter: 'kafka', action: 'none', group }));
    consumer.on(consumer.events.GROUP_JOIN, rebalanced);

    const joined = new Promise<void>((resolve) => {
      const off = consumer.on(consumer.events.GROUP_JOIN, () => {
        off();
        resolve();
      });
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: sub.fromBeginning ?? opts.fromBeginning ?? false });
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

  return {
    kind: 'kafka',

    async publish(topic, event) {
      assertEvent(topic, event);
      if (closed) throw new Error('bus: publish on a closed kafka bus');
      await producer.send(topic, toKafkaMessage(event));
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
