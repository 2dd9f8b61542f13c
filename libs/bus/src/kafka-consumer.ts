import type { EachBatchHandler, IMemberAssignment, KafkaMessage } from 'kafkajs';
import type { Handler } from './port';
import type { BusErrorHandler } from './errors';
import { fromKafkaMessage, type DeadLetter } from './kafka-codec';
import { backoffMs } from './timing';

interface Failing {
  failures: number;
  lastError: unknown;
}

/**
 * Handler failures per message (topic/partition/offset). They outlive a rejoin of the group: a message that comes
 * back to the same member after a rebalance or a restart of the consumer keeps its count, so `maxAttempts` is
 * reached whatever happens in between. Only the partitions a rejoin took away are forgotten (another member counts
 * them now). A partition stops at its first failing message, so there is at most one entry per partition.
 */
export class FailureCounts {
  private readonly entries = new Map<string, Failing>();

  /** One more failure; returns how many there have been. */
  failed(where: string, error: unknown): number {
    const failures = (this.entries.get(where)?.failures ?? 0) + 1;
    this.entries.set(where, { failures, lastError: error });
    return failures;
  }

  of(where: string): Failing | undefined {
    return this.entries.get(where);
  }

  forget(where: string): void {
    this.entries.delete(where);
  }

  /** After a rejoin: keeps the counts of the partitions this member still owns. */
  keepAssigned(assignment: IMemberAssignment): void {
    for (const where of this.entries.keys()) {
      const [topic, partition] = splitWhere(where);
      if (!assignment[topic]?.includes(partition)) this.entries.delete(where);
    }
  }
}

export const whereOf = (topic: string, partition: number, offset: string) => `${topic}/${partition}/${offset}`;

/** A topic name has no slash (Kafka allows letters, digits, `.`, `_` and `-`), so the last two fields are partition and offset. */
function splitWhere(where: string): [string, number] {
  const parts = where.split('/');
  return [parts.slice(0, -2).join('/'), Number(parts[parts.length - 2])];
}

export interface RetryPolicy {
  /** Handler calls per message before it is dead-lettered. */
  maxAttempts: number;
  /** Pause of a partition after its first failure; doubled after each further one, up to `capMs`. */
  baseMs: number;
  capMs: number;
}

export interface BatchHandlerConfig {
  group: string;
  handler: Handler;
  retry: RetryPolicy;
  /** The port's name of a topic on the cluster (without the installation's prefix), for the handler and dead letters. */
  topicName(onCluster: string): string;
  /** Sends the dead letter; the offset is resolved only once this resolved. */
  deadLetter(d: DeadLetter): Promise<void>;
  onError: BusErrorHandler;
}

type Outcome = { done: true } | { done: false; failures: number };

const isPowerOfTwo = (n: number) => (n & (n - 1)) === 0;

/**
 * Runs a fetched batch through the handler, message by message, resolving (so committing) each offset whose handler
 * resolved or whose dead letter was sent. At the first failure it resolves nothing more, pauses that partition alone
 * and resumes it after a backoff; kafkajs then fetches it again from the failed offset.
 *
 * It never throws a handler's failure to kafkajs. kafkajs retries a throwing handler a few times, then crashes the
 * consumer, which rejoins the group: a rebalance for every member, and a failure count that starts over if it
 * lives in the member (so `maxAttempts` above kafkajs's retries was never reached and a poison message looped
 * forever). Meanwhile the member's next fetch, of all its partitions, waits on the failing one. A paused partition
 * stalls only its own keys, as their order requires, and for `maxAttempts` attempts at most.
 */
export function batchHandler(c: BatchHandlerConfig): { eachBatch: EachBatchHandler; rejoined(a: IMemberAssignment): void; stop(): void } {
  const failures = new FailureCounts();
  const maxAttempts = Math.max(1, c.retry.maxAttempts);
  const timers = new Set<NodeJS.Timeout>();

  async function deadLetter(where: string, d: DeadLetter): Promise<Outcome> {
    const about = { adapter: 'kafka', topic: d.topic, group: c.group, ...(d.event ? { event: d.event } : {}) } as const;
    try {
      await c.deadLetter(d);
    } catch (err) {
      // Uncommitted, and counted as given up: the next attempt sends the dead letter without calling the handler again.
      c.onError(err, { ...about, action: 'will-retry' });
      return { done: false, failures: Math.max(maxAttempts, failures.of(where)?.failures ?? 0) };
    }
    failures.forget(where);
    c.onError(d.error, { ...about, action: 'dead-lettered' });
    return { done: true };
  }

  async function handle(onCluster: string, partition: number, message: KafkaMessage): Promise<Outcome> {
    const where = whereOf(onCluster, partition, message.offset);
    const topic = c.topicName(onCluster);
    const read = fromKafkaMessage(message);
    if ('error' in read) return deadLetter(where, { topic, group: c.group, raw: read.raw, error: read.error });
    const { event, raw } = read;
    const given = failures.of(where);
    if (given && given.failures >= maxAttempts) return deadLetter(where, { topic, group: c.group, raw, error: given.lastError, event });
    try {
      await c.handler(event, topic);
    } catch (error) {
      const n = failures.failed(where, error);
      if (n >= maxAttempts) return deadLetter(where, { topic, group: c.group, raw, error, event });
      // Every failure counts in the metric; the log hears of the 1st, 2nd, 4th, 8th.
      c.onError(error, { adapter: 'kafka', action: 'will-retry', topic, group: c.group, event, quiet: !isPowerOfTwo(n) });
      return { done: false, failures: n };
    }
    failures.forget(where);
    return { done: true };
  }

  const eachBatch: EachBatchHandler = async ({ batch, resolveOffset, heartbeat, pause, isRunning, isStale }) => {
    const { topic, partition } = batch;
    for (const message of batch.messages) {
      if (!isRunning() || isStale()) return;
      const outcome = await handle(topic, partition, message);
      if (!outcome.done) {
        const resume = pause();
        const timer = setTimeout(
          () => {
            timers.delete(timer);
            resume();
          },
          backoffMs(outcome.failures, c.retry.baseMs, c.retry.capMs),
        );
        // A paused partition waiting to resume must not keep a stopping process alive.
        timer.unref();
        timers.add(timer);
        return;
      }
      resolveOffset(message.offset);
      await heartbeat();
    }
  };

  return {
    eachBatch,
    rejoined: (assignment) => failures.keepAssigned(assignment),
    stop: () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
    },
  };
}
