import type { EachBatchHandler, IMemberAssignment, KafkaMessage } from 'kafkajs';
import type { Handler } from './port';
import type { BusErrorHandler } from './errors';
import { fromKafkaMessage, type DeadLetter } from './kafka-codec';
import { backoffMs, type EndableWait, endableWait } from './timing';

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
    keepAssigned(this.entries, assignment);
  }
}

/** The batch's message indexes by key, each key's in offset order; keyless messages share one run. */
function runsByKey(messages: KafkaMessage[]): Map<string | null, number[]> {
  const runs = new Map<string | null, number[]>();
  for (const [i, m] of messages.entries()) {
    const key = m.key ? m.key.toString('latin1') : null;
    const run = runs.get(key);
    if (run) run.push(i);
    else runs.set(key, [i]);
  }
  return runs;
}

export const whereOf = (topic: string, partition: number, offset: string) => `${topic}/${partition}/${offset}`;

/**
 * Drops the entries (keyed by whereOf) of the partitions a rejoin took from this member. A topic name has no slash
 * (Kafka allows letters, digits, `.`, `_` and `-`), so the last two fields are partition and offset.
 */
function keepAssigned(byWhere: { keys(): Iterable<string>; delete(where: string): unknown }, assignment: IMemberAssignment): void {
  for (const where of byWhere.keys()) {
    const parts = where.split('/');
    if (!assignment[parts.slice(0, -2).join('/')]?.includes(Number(parts[parts.length - 2]))) byWhere.delete(where);
  }
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
  /**
   * After a batch of fewer than LINGER_BELOW messages, how long the next fetch waits (0: not at all). Every batch
   * kafkajs hands over costs a fetch and an offset commit, and a broker answers a fetch as soon as it has one byte:
   * under a steady stream of events a consumer then fetched and committed after every few events, each time a
   * request the broker writes (the commit) and a wake-up of both processes. The Redis adapter's readLingerMs.
   */
  lingerMs?: number;
}

/** A batch this full was not thin: the next fetch goes at once. The Redis adapter's read count. */
export const LINGER_BELOW = 100;

type Outcome = { done: true } | { done: false; failures: number };

const isPowerOfTwo = (n: number) => (n & (n - 1)) === 0;

/**
 * Runs a fetched batch through the handler: the keys of the batch side by side, each key's messages in order, as
 * the Redis adapter does with a read. One message at a time, billing handled one settle per commit whatever the
 * load, and its ledger batches only the calls that overlap. A handled message's offset is resolved (so committed)
 * once every message before it in the partition is handled too, or was dead-lettered.
 *
 * At a key's first failure the rest of that key waits; once the batch is through, the partition alone is paused and
 * resumed after a backoff, and kafkajs fetches it again from the first offset not handled. Messages of other keys
 * handled beyond that offset are remembered, so the refetch skips them rather than handle them twice.
 *
 * It never throws a handler's failure to kafkajs. kafkajs retries a throwing handler a few times, then crashes the
 * consumer, which rejoins the group: a rebalance for every member, and a failure count that starts over if it
 * lives in the member (so `maxAttempts` above kafkajs's retries was never reached and a poison message looped
 * forever). Meanwhile the member's next fetch, of all its partitions, waits on the failing one. A paused partition
 * stalls only its own keys, as their order requires, and for `maxAttempts` attempts at most.
 */
export function batchHandler(c: BatchHandlerConfig): { eachBatch: EachBatchHandler; rejoined(a: IMemberAssignment): void; stop(): void } {
  const failures = new FailureCounts();
  // Messages handled while an earlier offset of their partition was not (its key failed), so not committed yet: a
  // refetch from that offset skips them. Like the failure counts, they outlive a rejoin only where still assigned.
  const handledAhead = new Set<string>();
  const maxAttempts = Math.max(1, c.retry.maxAttempts);
  const timers = new Set<NodeJS.Timeout>();
  // One wait shared by the batches of a fetch, which run side by side (partitionsConsumedConcurrently): the fetcher
  // fetches again once all of them returned. Ended early by stop(), so a closing consumer is not held up.
  let linger: EndableWait | undefined;
  const lingered = (): Promise<void> => {
    linger ??= endableWait(c.lingerMs ?? 0, () => {
      linger = undefined;
    });
    return linger.done;
  };

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
    const { topic, partition, messages } = batch;
    const done = new Array<boolean>(messages.length).fill(false);
    let firstFailure: { index: number; failures: number } | undefined;
    // kafkajs sends a heartbeat only once its interval has passed; the keys running side by side share that call.
    // One that fails (the group is rebalancing) stops every key, and is thrown to kafkajs, which rejoins, once what
    // was handled is resolved.
    let beat: Promise<void> | undefined;
    let beatFailed: { error: unknown } | undefined;
    const keepAlive = () =>
      (beat ??= heartbeat()
        .catch((error: unknown) => {
          beatFailed ??= { error };
        })
        .finally(() => {
          beat = undefined;
        }));

    await Promise.all(
      [...runsByKey(messages).values()].map(async (run) => {
        for (const i of run) {
          if (beatFailed || !isRunning() || isStale()) return;
          if (handledAhead.size > 0 && handledAhead.has(whereOf(topic, partition, messages[i].offset))) {
            done[i] = true;
            continue;
          }
          const outcome = await handle(topic, partition, messages[i]);
          if (!outcome.done) {
            if (!firstFailure || i < firstFailure.index) firstFailure = { index: i, failures: outcome.failures };
            return;
          }
          done[i] = true;
          await keepAlive();
        }
      }),
    );

    const firstUndone = done.indexOf(false);
    const handled = firstUndone === -1 ? messages.length : firstUndone;
    // Nothing to remember or forget in the usual batch, handled whole with nothing handled ahead before it.
    if (handled < messages.length || handledAhead.size > 0) {
      for (const [i, m] of messages.entries()) {
        const where = whereOf(topic, partition, m.offset);
        if (i < handled) handledAhead.delete(where);
        else if (done[i]) handledAhead.add(where);
      }
    }
    if (handled > 0) resolveOffset(messages[handled - 1].offset);
    if (firstFailure) {
      const resume = pause();
      const timer = setTimeout(
        () => {
          timers.delete(timer);
          resume();
        },
        backoffMs(firstFailure.failures, c.retry.baseMs, c.retry.capMs),
      );
      // A paused partition waiting to resume must not keep a stopping process alive.
      timer.unref();
      timers.add(timer);
    }
    if (beatFailed) throw beatFailed.error;
    if (c.lingerMs && !firstFailure && messages.length < LINGER_BELOW && isRunning()) await lingered();
  };

  return {
    eachBatch,
    rejoined: (assignment) => {
      failures.keepAssigned(assignment);
      keepAssigned(handledAhead, assignment);
    },
    stop: () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      linger?.end();
    },
  };
}
