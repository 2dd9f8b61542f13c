import type * as KafkaJs from 'kafkajs';
import type { KafkaConfig } from 'kafkajs';
import type { EventBus, Handler, SubscribeOptions, Subscription } from './port';
import { assertEvent } from './codec';
import { errorMessage, guarded, logBusError, type BusErrorHandler } from './errors';
import type { KafkaClient } from './kafka-client';
import { consumerConfig, deadLetterMessage, defaultDeadLetterTopic, toKafkaMessage, type CreateTopics } from './kafka-codec';
import { batchHandler } from './kafka-consumer';
import { BatchingProducer, type BatchLimits } from './kafka-producer';
import { ProducerSession, lostSession } from './kafka-producer-session';
import { KafkaTopics } from './kafka-topics';
import { explainUntrustedBroker } from './kafka-tls';
import { settleWithin } from './timing';

// Required when a Kafka bus opens, not at start: a process on another bus (the local fleet's Redis Streams) would
// hold kafkajs's ~5 MiB for nothing.
export const kafkaJs = (): typeof KafkaJs => require('kafkajs');

/** Partitions of one member handled at once: more than a topic has by default (3), so a fetch's batches all are. */
export const PARTITIONS_SIDE_BY_SIDE = 8;

/** What a fetch of a gathering group (SubscribeOptions.gatherMs) waits to fill: many usage events, not a few. */
export const GATHER_FETCH_BYTES = 64 * 1024;

export interface KafkaBusOptions {
  clientId?: string;
  /** Extra client settings (ssl, sasl, timeouts); `brokers` and `clientId` come from the arguments above. */
  kafka?: Omit<KafkaConfig, 'brokers' | 'clientId'>;
  /** Where a new group starts. Default false (the tail), as the Redis adapter does. */
  fromBeginning?: boolean;
  /**
   * Prepended to every topic and consumer group name on the cluster (KAFKA_TOPIC_PREFIX), so gateways sharing one
   * cluster never read each other's events. Handlers and dead-letter names see the topics without it.
   */
  topicPrefix?: string;
  /**
   * How the adapter creates a topic it is about to use and the cluster lacks (the topics a subscription reads and
   * their dead-letter topics on subscribe, a topic on its first publish). Default 3 partitions, the broker's
   * replication factor. `false` leaves topics to the operator: a missing one then fails the subscribe or publish.
   */
  createTopics?: CreateTopics | false;
  /** Handler calls per message before it is dead-lettered. Default 10. */
  maxAttempts?: number;
  /** The pause of a failing message's partition after its first failure; doubles per failure. Default 100 ms. */
  retryBaseMs?: number;
  /** The longest such pause. Default 30000 ms, so the default 10 attempts take about 40 s before a dead letter. */
  retryCapMs?: number;
  /** Where given-up messages go. Default `<topic>.dead-letter`. */
  deadLetterTopic?: (topic: string) => string;
  /** How long `close()` waits for in-flight handlers before giving up on them. Default 5000 ms. */
  closeTimeoutMs?: number;
  /** How long `subscribe()` waits for the first group join. Default 30000 ms. */
  joinTimeoutMs?: number;
  /**
   * How long a fetch waits at the broker for new messages. It bounds how late a consumer notices a resumed partition,
   * a rebalance or a close. Default 1000 ms (kafkajs's 5000 ms made each of those take up to 5 s).
   */
  fetchMaxWaitMs?: number;
  /**
   * After a fetch brought a partition fewer than LINGER_BELOW events, how long the consumer waits before the next one,
   * so that the next gathers more (kafka-consumer.ts). Default 20 ms, as the Redis adapter's readLingerMs. A group
   * with `gatherMs` waits at the broker instead.
   */
  readLingerMs?: number;
  /** Bounds of one produce request (bytes counted as the records' keys, values and headers). */
  batch?: Partial<BatchLimits>;
  onError?: BusErrorHandler;
}

/**
 * Kafka adapter. Keys are the partition key, so one account's events stay in one partition and in order.
 * Offsets are committed only for messages whose handler resolved or whose dead letter was sent, so a throw or a
 * crash means redelivery, which the port promises.
 */
export function createKafkaBus(brokers: string[], opts: KafkaBusOptions = {}): EventBus {
  if (brokers.length === 0) throw new Error('bus: kafka needs at least one broker');
  const { Kafka, logLevel } = kafkaJs();
  return kafkaBusOn(new Kafka({ logLevel: logLevel.WARN, ...opts.kafka, brokers, clientId: opts.clientId ?? 'gateway-bus' }), opts);
}

/**
 * The Kafka consumer group of a subscription: the port's group and the topics it reads. Kafka's group leader assigns
 * the partitions of its own topics to every member, and a member drops those it does not read, so two subscriptions
 * of one port group with different topics (the catalogue's stats and its health reports) must not share a Kafka
 * group: each would leave the other's topics unread. Members of one service subscribe alike, so they still meet.
 */
export const kafkaGroupId = (group: string, topics: string[]) => `${group}:${[...new Set(topics)].sort().join(',')}`;

/** `stopped`: kafkajs crashed the consumer and will not restart it; only a new process consumes again. */
type ConsumerState = { running: true } | { running: false; why: string; stopped: boolean };

/** The adapter over any client; `createKafkaBus` is it over a real one. */
export function kafkaBusOn(kafka: KafkaClient, opts: Omit<KafkaBusOptions, 'clientId' | 'kafka'> = {}): EventBus {
  const onError = guarded(opts.onError ?? logBusError);
  const deadLetterTopic = opts.deadLetterTopic ?? defaultDeadLetterTopic;
  const closeTimeoutMs = opts.closeTimeoutMs ?? 5_000;
  const prefix = opts.topicPrefix ?? '';
  const onCluster = (name: string) => `${prefix}${name}`;
  const retry = { maxAttempts: opts.maxAttempts ?? 10, baseMs: opts.retryBaseMs ?? 100, capMs: opts.retryCapMs ?? 30_000 };

  // Idempotent: a produce request retried after its answer was lost (a broker failover, a cut connection) is written
  // once, not twice; kafkajs requires acks -1 (every send uses it) and one request in flight for it. One request in
  // flight also keeps a key's events in order across retries. The Java-compatible partitioner puts a key on the
  // partition producers in other languages would. A failed send ends the producer's session
  // (kafka-producer-session.ts): its sequence numbers may no longer be the broker's, and kafkajs would keep them.
  const session = new ProducerSession(
    () => kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: kafkaJs().Partitioners.DefaultPartitioner }),
    (err) => onError(err, { adapter: 'kafka', action: 'none', quiet: !lostSession(err) }),
  );
  const producer = new BatchingProducer(session, () => session.connect(), opts.batch);
  const topics = new KafkaTopics(kafka, opts.createTopics ?? {});

  const subscriptions = new Map<Subscription, { group: string; state: ConsumerState }>();
  // Publishes between their call and the producer's queue (a topic lookup), which close() must still send.
  const publishing = new Set<Promise<void>>();
  let closed = false;

  async function subscribe(group: string, names: string[], handler: Handler, sub: SubscribeOptions = {}): Promise<Subscription> {
    if (closed) throw new Error('bus: subscribe on a closed kafka bus');
    if (names.length === 0) throw new Error('bus: subscribe needs at least one topic');
    await topics.ensure([...names, ...names.map(deadLetterTopic)].map(onCluster)).catch((err: unknown) => {
      throw explainUntrustedBroker(err);
    });
    const consumer = kafka.consumer({
      ...consumerConfig(onCluster(kafkaGroupId(group, names)), sub.claimIdleMs),
      ...(sub.gatherMs === undefined
        ? { maxWaitTimeInMs: opts.fetchMaxWaitMs ?? 1_000 }
        : { maxWaitTimeInMs: sub.gatherMs, minBytes: GATHER_FETCH_BYTES }),
    });
    const fromCluster = new Map(names.map((n) => [onCluster(n), n]));
    const batches = batchHandler({
      group,
      handler,
      retry,
      topicName: (t) => fromCluster.get(t) ?? t,
      deadLetter: (d) => producer.send(onCluster(deadLetterTopic(d.topic)), deadLetterMessage(d)),
      onError,
      lingerMs: sub.gatherMs === undefined ? (opts.readLingerMs ?? 20) : 0,
    });
    const entry = { group, state: { running: false, why: 'has not joined its group yet', stopped: false } as ConsumerState };
    consumer.on(consumer.events.CRASH, (e) => {
      const { error, restart } = e.payload;
      // kafkajs restarts a consumer after a retriable error for as long as it takes (a broker outage crashes it again
      // and again, each time with restart true); restart false is its last word on this consumer.
      entry.state = { running: false, why: `crashed (${errorMessage(error)})${restart ? ', restarting' : ' and stopped'}`, stopped: !restart };
      onError(error, { adapter: 'kafka', action: 'none', group });
    });
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      entry.state = { running: true };
      batches.rejoined(e.payload.memberAssignment);
    });

    const joined = new Promise<void>((resolve) => {
      const off = consumer.on(consumer.events.GROUP_JOIN, () => {
        off();
        resolve();
      });
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [...fromCluster.keys()], fromBeginning: sub.fromBeginning ?? opts.fromBeginning ?? false });
      // The partitions of a fetch side by side, as the keys of a batch are: their events reach the handler in one
      // turn, where billing's ledger gathers them into one statement, and they share one linger.
      await consumer.run({ eachBatch: batches.eachBatch, eachBatchAutoResolve: false, partitionsConsumedConcurrently: PARTITIONS_SIDE_BY_SIDE });
    } catch (err) {
      batches.stop();
      await consumer.disconnect().catch(() => undefined);
      throw explainUntrustedBroker(err);
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
          batches.stop();
          // disconnect() waits for the running handler; a stuck handler must not hold shutdown hostage.
          await settleWithin([consumer.disconnect()], closeTimeoutMs);
        })()),
    };
    subscriptions.set(subscription, entry);
    return subscription;
  }

  return {
    kind: 'kafka',

    async publish(topic, event) {
      assertEvent(topic, event);
      if (closed) throw new Error('bus: publish on a closed kafka bus');
      const name = onCluster(topic);
      if (topics.exists(name)) return producer.send(name, toKafkaMessage(event));
      const sent = topics.ensure([name]).then(() => producer.send(name, toKafkaMessage(event)));
      publishing.add(sent);
      try {
        await sent;
      } finally {
        publishing.delete(sent);
      }
    },

    subscribe,

    /** Up when the cluster answers and every consumer is a member of its group: a crashed one consumes nothing. */
    async ping() {
      await topics.describeCluster().catch((err: unknown) => {
        throw explainUntrustedBroker(err);
      });
      for (const { group, state } of subscriptions.values()) {
        if (!state.running) throw new Error(`bus: the kafka consumer of group ${group} ${state.why}`);
      }
    },

    checkConsumers() {
      for (const { group, state } of subscriptions.values()) {
        if (!state.running && state.stopped)
          throw new Error(`bus: the kafka consumer of group ${group} ${state.why}; only a restart of the process runs it again`);
      }
    },

    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([...subscriptions.keys()].map((s) => s.close()));
      await Promise.allSettled([...publishing]);
      await producer.flush();
      await Promise.allSettled([session.disconnect(), topics.close()]);
    },
  };
}
