/** Test support only: a kafkajs stand-in for the unit tests, since no broker can run where they do. */
import type {
  Batch,
  ConsumerConfig,
  ConsumerCrashEvent,
  ConsumerGroupJoinEvent,
  ConsumerRunConfig,
  ConsumerSubscribeTopics,
  EachBatchHandler,
  IMemberAssignment,
  ITopicConfig,
  KafkaMessage,
  Message,
  ProducerBatch,
  ProducerConfig,
  RecordMetadata,
} from 'kafkajs';
import type { KafkaAdmin, KafkaClient, KafkaConsumer, KafkaProducer } from '../kafka-client';

type CrashListener = (event: ConsumerCrashEvent) => void;
type JoinListener = (event: ConsumerGroupJoinEvent) => void;

export interface Delivery {
  /** eachBatch calls for this message, the last one included. */
  deliveries: number;
  /** Whether its offset was finally resolved, which is what kafkajs commits. */
  committed: boolean;
}

/**
 * One consumer of one group. `deliver` plays kafkajs' runner for one message: a resolved offset is committed; an
 * unresolved one is fetched again from that offset, once its partition is resumed if the handler paused it.
 */
class FakeConsumer implements KafkaConsumer {
  readonly events = { CRASH: 'consumer.crash', GROUP_JOIN: 'consumer.group_join' } as const;
  subscription?: ConsumerSubscribeTopics;
  connected = false;
  /** How often the handler paused a partition. */
  pauses = 0;
  /** Set to make the next heartbeat fail with it, as kafkajs's does while the group rebalances. */
  heartbeatError?: Error;
  /** Set to make subscribe() fail at this step. */
  failOn?: 'connect' | 'subscribe' | 'run';
  private readonly crashListeners = new Set<CrashListener>();
  private readonly joinListeners = new Set<JoinListener>();
  private eachBatch?: EachBatchHandler;
  /** What the adapter handed to run(). */
  runConfig?: ConsumerRunConfig;
  private inflight = new Set<Promise<unknown>>();
  private nextOffset = 0;
  private running?: () => void;
  /** Resolves once run() has been called, i.e. the adapter is waiting for its group to join. */
  readonly started = new Promise<void>((r) => (this.running = r));

  constructor(
    readonly config: ConsumerConfig,
    private readonly joinOnRun: boolean,
  ) {}

  async connect(): Promise<void> {
    if (this.failOn === 'connect') throw new Error('fake: connect refused');
    this.connected = true;
  }

  async subscribe(subscription: ConsumerSubscribeTopics): Promise<void> {
    if (this.failOn === 'subscribe') throw new Error('fake: unknown topic');
    this.subscription = subscription;
  }

  async run(config?: ConsumerRunConfig): Promise<void> {
    if (this.failOn === 'run') throw new Error('fake: run failed');
    this.eachBatch = config?.eachBatch;
    this.runConfig = config;
    this.running!();
    // A broker answers the join later, never inside run().
    if (this.joinOnRun) setImmediate(() => this.joinGroup());
  }

  /** As kafkajs does: waits for the eachMessage in flight. */
  async disconnect(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
    this.connected = false;
  }

  on(eventName: 'consumer.crash', listener: CrashListener): () => void;
  on(eventName: 'consumer.group_join', listener: JoinListener): () => void;
  on(eventName: 'consumer.crash' | 'consumer.group_join', listener: CrashListener | JoinListener): () => void {
    // The overloads above pair each name with its listener type; the implementation cannot see that pairing.
    const set = (eventName === this.events.CRASH ? this.crashListeners : this.joinListeners) as Set<CrashListener | JoinListener>;
    set.add(listener);
    return () => void set.delete(listener);
  }

  /** The group (re)joined: the first join, or a rebalance; by default this member owns partitions 0-2 of its topics. */
  joinGroup(memberAssignment?: IMemberAssignment): void {
    const payload = {
      duration: 0,
      groupId: this.config.groupId,
      isLeader: true,
      leaderId: 'm1',
      groupProtocol: 'RoundRobin',
      memberId: 'm1',
      memberAssignment: memberAssignment ?? Object.fromEntries((this.subscription?.topics ?? []).map((t) => [String(t), [0, 1, 2]])),
    };
    for (const l of [...this.joinListeners]) l({ id: 'join', type: this.events.GROUP_JOIN, timestamp: Date.now(), payload });
  }

  crash(error: Error, restart = true): void {
    const payload = { error, groupId: this.config.groupId, restart };
    for (const l of [...this.crashListeners]) l({ id: 'crash', type: this.events.CRASH, timestamp: Date.now(), payload });
  }

  /**
   * Hands `messages` to eachBatch as one fetched batch of one partition, at offsets 0, 1, 2..., then, as kafkajs does,
   * fetches again from the first offset not resolved (once the partition is resumed, if the handler paused it), until
   * every offset is resolved, after `times` fetches, or once eachBatch throws.
   */
  async deliverBatch(topic: string, messages: Pick<Message, 'key' | 'value' | 'headers'>[], times = 10): Promise<BatchDelivery> {
    const received = messages.map((m, i) => asReceived(m, String(i)));
    const out: BatchDelivery = { fetches: [] };
    for (let fetch = 0; fetch < times; fetch++) {
      const from = out.committed === undefined ? 0 : Number(out.committed) + 1;
      if (from >= received.length) break;
      const batch = { topic, partition: 0, messages: received.slice(from) } as unknown as Batch;
      out.fetches.push(batch.messages.map((m) => m.offset));
      let resumed: Promise<void> | undefined;
      try {
        ({ resumed } = await this.fetch(batch, (o) => {
          if (out.committed === undefined || Number(o) > Number(out.committed)) out.committed = o;
        }));
      } catch (error) {
        out.thrown = error;
        break;
      }
      if (resumed) await resumed;
    }
    return out;
  }

  /**
   * One fetch, as kafkajs' runner hands it over: eachBatch once, tracked so disconnect() waits for it. `resumed`
   * resolves when the partition resumes, if the handler paused it.
   */
  private async fetch(batch: Batch, resolveOffset: (offset: string) => void): Promise<{ resumed?: Promise<void> }> {
    if (!this.eachBatch) throw new Error('fake: run() has not been called');
    let resumed: Promise<void> | undefined;
    const call = this.eachBatch({
      batch,
      resolveOffset,
      heartbeat: async () => {
        const error = this.heartbeatError;
        this.heartbeatError = undefined;
        if (error) throw error;
      },
      pause: () => {
        this.pauses++;
        let resume!: () => void;
        resumed = new Promise<void>((r) => (resume = r));
        return resume;
      },
      commitOffsetsIfNecessary: async () => undefined,
      uncommittedOffsets: () => ({ topics: [] }),
      isRunning: () => this.connected,
      isStale: () => false,
    });
    this.inflight.add(call);
    try {
      await call;
    } finally {
      this.inflight.delete(call);
    }
    // Wrapped: an async function returning the promise itself would wait for it.
    return { resumed };
  }

  /**
   * Hands one message to eachBatch, as a batch of its own, until its offset is resolved, at most `times` times. A
   * message that comes back later (after a rebalance, say) is the same `offset` delivered again; without one, each
   * call is a new message. A paused partition is fetched again only once the handler resumes it.
   */
  async deliver(
    topic: string,
    message: Pick<Message, 'key' | 'value' | 'headers'>,
    opts: { times?: number; offset?: string; partition?: number } = {},
  ): Promise<Delivery> {
    if (!this.eachBatch) throw new Error('fake: run() has not been called');
    const { times = 100, offset = String(this.nextOffset++), partition = 0 } = opts;
    const received = asReceived(message, offset);
    for (let deliveries = 1; deliveries <= times; deliveries++) {
      let resolved = false;
      const batch = { topic, partition, messages: [received] } as unknown as Batch;
      const { resumed } = await this.fetch(batch, (o) => void (resolved ||= o === offset));
      if (resolved) return { deliveries, committed: true };
      if (deliveries < times) await resumed;
    }
    return { deliveries: times, committed: false };
  }
}

export interface BatchDelivery {
  /** The offsets each fetch handed to eachBatch. */
  fetches: string[][];
  /** The last offset resolved, which is what kafkajs commits; undefined if none was. */
  committed?: string;
  /** What eachBatch threw to kafkajs, which ends the delivery (kafkajs would rejoin the group). */
  thrown?: unknown;
}

/** The client: records what the adapter sends and the consumers it makes. */
export class FakeKafka implements KafkaClient {
  producerConfig?: ProducerConfig;
  readonly batches: ProducerBatch[] = [];
  readonly consumers: FakeConsumer[] = [];
  readonly createdTopics: ITopicConfig[] = [];
  /** Topics the cluster has; createTopics adds to them. */
  readonly existingTopics = new Set<string>();
  topicLookups = 0;
  producerConnects = 0;
  producerConnected = false;
  adminConnected = false;
  clusterDescribed = 0;
  /** Set to make the next sendBatch fail. */
  failNextSend?: Error;
  /** Set to make the consumers made from now on fail at this step of subscribe(). */
  failConsumersOn?: FakeConsumer['failOn'];
  private consumerMade?: (c: FakeConsumer) => void;

  constructor(private readonly opts: { joinOnRun?: boolean } = {}) {}

  /** Every message sent, in order, flattened out of the batches. */
  get sent(): { topic: string; message: Message }[] {
    return this.batches.flatMap((b) => (b.topicMessages ?? []).flatMap((t) => t.messages.map((message) => ({ topic: t.topic, message }))));
  }

  /** The next consumer the adapter makes, once it has called run(). */
  nextConsumer(): Promise<FakeConsumer> {
    return new Promise<FakeConsumer>((r) => (this.consumerMade = r)).then(async (c) => (await c.started, c));
  }

  producer(config: ProducerConfig): KafkaProducer {
    this.producerConfig = config;
    return {
      connect: async () => {
        this.producerConnects++;
        this.producerConnected = true;
      },
      disconnect: async () => void (this.producerConnected = false),
      sendBatch: async (batch: ProducerBatch): Promise<RecordMetadata[]> => {
        const failure = this.failNextSend;
        this.failNextSend = undefined;
        if (failure) throw failure;
        this.batches.push(batch);
        return [];
      },
    };
  }

  consumer(config: ConsumerConfig): FakeConsumer {
    const c = new FakeConsumer(config, this.opts.joinOnRun ?? true);
    c.failOn = this.failConsumersOn;
    this.consumers.push(c);
    this.consumerMade?.(c);
    return c;
  }

  admin(): KafkaAdmin {
    return {
      connect: async () => void (this.adminConnected = true),
      disconnect: async () => void (this.adminConnected = false),
      listTopics: async () => (this.topicLookups++, [...this.existingTopics]),
      createTopics: async ({ topics }) => {
        this.createdTopics.push(...topics);
        for (const t of topics) this.existingTopics.add(t.topic);
        return true;
      },
      describeCluster: async () => (
        this.clusterDescribed++, { brokers: [{ nodeId: 1, host: 'fake', port: 9092 }], controller: 1, clusterId: 'fake' }
      ),
    };
  }
}

/** A sent message as a consumer receives it: key, value and header values come back as Buffers. */
export function asReceived(message: Pick<Message, 'key' | 'value' | 'headers'>, offset = '0'): KafkaMessage {
  const buf = (v: Buffer | string) => (typeof v === 'string' ? Buffer.from(v, 'utf8') : v);
  const headers = Object.fromEntries(
    Object.entries(message.headers ?? {}).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.map(buf) : buf(v)]])),
  );
  return {
    key: message.key == null ? null : buf(message.key),
    value: message.value == null ? null : buf(message.value),
    timestamp: '0',
    attributes: 0,
    offset,
    headers,
  };
}
