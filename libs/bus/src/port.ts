/**
 * The event bus port. Adapters: in-memory (embedded, unit tests), Redis Streams (fleet without Kafka),
 * Kafka via kafkajs (production). Delivery is at-least-once: a handler that throws, or a consumer that dies
 * before acknowledging, sees the event again. Consumers are idempotent on `event.id`.
 * Events with the same key are delivered in publish order within a consumer group.
 */
export interface BusEvent<T = unknown> {
  /** Unique per event; the consumer's de-duplication key. */
  id: string;
  /** Versioned event type, e.g. `hold.close.v1`. */
  type: string;
  /** Partition and ordering key: events with one key are delivered in order (hold events use the hold id). */
  key: string;
  data: T;
  /** Trace context (W3C traceparent) and other metadata that rides along. */
  headers?: Record<string, string>;
}

export type Handler = (event: BusEvent, topic: string) => Promise<void>;

export interface Subscription {
  close(): Promise<void>;
}

export interface SubscribeOptions {
  /** Consumer name inside the group; defaults to a random id per process. */
  consumer?: string;
  /** Redelivery: how long an unacknowledged event stays with a dead consumer before another takes it. */
  claimIdleMs?: number;
  /**
   * A group that does not exist yet starts at the oldest retained event instead of the newest: for a consumer
   * that must count what was published before it first started (the catalogue's stats). An existing group
   * always resumes where it stood. The in-memory bus keeps no history, so it has nothing to replay.
   */
  fromBeginning?: boolean;
  /**
   * How late this group may see an event, so that each read gathers more of them: a consumer nobody waits on (the
   * catalogue's stats, a job's cost) then reads a few times a second under load instead of after every few events,
   * each read a wake-up of its process and of the bus. Redis: the wait after a read that was not full (the bus's
   * readLingerMs otherwise); Kafka: how long the broker may hold a fetch to fill GATHER_FETCH_BYTES. The in-memory
   * bus hands every event over at once.
   */
  gatherMs?: number;
}

export interface EventBus {
  readonly kind: 'memory' | 'redis' | 'kafka';
  publish(topic: string, event: BusEvent): Promise<void>;
  subscribe(group: string, topics: string[], handler: Handler, opts?: SubscribeOptions): Promise<Subscription>;
  /** Throws when the bus is unreachable, or a consumer of this process is not consuming now (for whatever reason). */
  ping(): Promise<void>;
  /**
   * Throws, naming it, when a consumer of this process has stopped for good: nothing will run it again before the
   * process restarts, so the process is broken by itself and must not be ready. A consumer away from its group for a
   * while (a broker outage, a rebalance, a restart after a crash) has not stopped: that is the bus's outage, which
   * `ping` reports. Synchronous: it reads the process's own state, never the network.
   */
  checkConsumers(): void;
  close(): Promise<void>;
}
