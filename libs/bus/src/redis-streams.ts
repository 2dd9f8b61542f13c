import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import Redis, { type RedisOptions } from 'ioredis';
import type { EventBus, Handler, SubscribeOptions, Subscription } from './port';
import { assertEvent, encodeEvent } from './codec';
import { guarded, logBusError, type BusErrorHandler } from './errors';
import { StreamConsumer, type StreamConsumerConfig } from './redis-consumer';
import { StreamTrimmer } from './redis-trim';
import { settleWithin } from './timing';

export interface RedisBusOptions {
  /** Prepended to the topic to name its stream. Default `bus:`. */
  prefix?: string;
  /**
   * Length from which a stream is trimmed, and then only of entries every consumer group has acknowledged: a group
   * that falls behind keeps its backlog. A stream no group reads is kept near this length. Default 100000.
   */
  maxLen?: number;
  /**
   * Entries a stream may hold, unread ones included, before publishes to it are refused (loudly, to the publisher
   * and `onError` with action `refused`): never trimmed unread. Default 1000000 (about 16 minutes of a group's
   * outage at 1,000 events/s).
   */
  capLen?: number;
  /** Default for `SubscribeOptions.claimIdleMs`. Default 30000 ms. */
  claimIdleMs?: number;
  /** Longest a read blocks; bounds how late a claim pass or a close can be. Default 1000 ms. */
  blockMs?: number;
  /** Messages per XREADGROUP / XAUTOCLAIM. Default 100. */
  batchSize?: number;
  /**
   * After a read that was not full, how long a consumer waits before reading again, so that one read and one XACK
   * carry many events: events reach a busy consumer up to this much later. Default 20 ms; 0 reads again at once.
   */
  readLingerMs?: number;
  /** Handler calls per round before the message's key is parked: it and the key's later messages wait, pending. Default 3. */
  maxAttempts?: number;
  /** First retry delay, in place and between a parked key's rounds; doubles per attempt, rounds up to claimIdleMs. Default 50 ms. */
  retryBaseMs?: number;
  /**
   * Failed rounds (or, for a message claimed from a dead consumer, deliveries) after which a message goes to the
   * `<prefix>dead:<topic>` stream, with an `onError` of action `dead-lettered`. Default 20: with the defaults, about
   * 3 to 5 minutes of a failing handler (a database outage), as 10 claims 30 s apart were before.
   */
  maxDeliveries?: number;
  /** How long `close()` lets an in-flight handler finish before abandoning it (its message stays pending). Default 5000 ms. */
  closeTimeoutMs?: number;
  /** Passed to ioredis for the command connection and, duplicated, each subscription's blocking connection. */
  redis?: RedisOptions;
  onError?: BusErrorHandler;
}

/**
 * Redis Streams adapter: one stream per topic, one Redis consumer group per bus group. Publishing is one XADD.
 * Each subscription owns a connection because XREADGROUP BLOCK would stall every other command queued behind it.
 */
export function createRedisBus(url: string, opts: RedisBusOptions = {}): EventBus {
  const prefix = opts.prefix ?? 'bus:';
  const maxLen = opts.maxLen ?? 100_000;
  const onError = guarded(opts.onError ?? logBusError);
  // A publish should fail within a few reconnect attempts rather than sit in ioredis' offline queue for minutes.
  // Auto-pipelined: the publishes and acks of many requests in one tick leave in one write, not one syscall each.
  const cmd = new Redis(url, { maxRetriesPerRequest: 3, enableAutoPipelining: true, ...opts.redis });
  cmd.on('error', (err) => onError(err, { adapter: 'redis', action: 'none' }));
  const trimmer = new StreamTrimmer({
    cmd,
    keep: maxLen,
    cap: Math.max(maxLen, opts.capLen ?? 1_000_000),
    onError: (err, stream) => onError(err, { adapter: 'redis', action: 'none', topic: stream.slice(prefix.length) }),
  });
  const subscriptions = new Set<Subscription>();
  let closed = false;

  const base: Omit<StreamConsumerConfig, 'group' | 'consumer' | 'topics' | 'handler' | 'claimIdleMs' | 'fromBeginning'> = {
    cmd,
    streamKey: (topic) => prefix + topic,
    deadLetterKey: (topic) => `${prefix}dead:${topic}`,
    maxLen,
    blockMs: opts.blockMs ?? 1_000,
    batchSize: opts.batchSize ?? 100,
    readLingerMs: opts.readLingerMs ?? 20,
    maxAttempts: Math.max(1, opts.maxAttempts ?? 3),
    retryBaseMs: opts.retryBaseMs ?? 50,
    maxDeliveries: Math.max(1, opts.maxDeliveries ?? 20),
    closeTimeoutMs: opts.closeTimeoutMs ?? 5_000,
    onError,
  };

  return {
    kind: 'redis',

    async publish(topic, event) {
      assertEvent(topic, event);
      if (closed) throw new Error('bus: publish on a closed redis bus');
      const stream = prefix + topic;
      try {
        await trimmer.admit(stream);
      } catch (err) {
        onError(err, { adapter: 'redis', action: 'refused', topic, event });
        throw err;
      }
      await cmd.xadd(stream, '*', 'e', encodeEvent(event));
      trimmer.published(stream);
    },

    async subscribe(group: string, topics: string[], handler: Handler, sub: SubscribeOptions = {}): Promise<Subscription> {
      if (closed) throw new Error('bus: subscribe on a closed redis bus');
      if (topics.length === 0) throw new Error('bus: subscribe needs at least one topic');
      const consumer = new StreamConsumer({
        ...base,
        group,
        topics: [...new Set(topics)],
        handler,
        consumer: sub.consumer ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
        claimIdleMs: sub.claimIdleMs ?? opts.claimIdleMs ?? 30_000,
        fromBeginning: sub.fromBeginning ?? false,
        readLingerMs: sub.gatherMs ?? base.readLingerMs,
      });
      await consumer.start();
      const subscription: Subscription = {
        close: async () => {
          subscriptions.delete(subscription);
          await consumer.stop();
        },
      };
      subscriptions.add(subscription);
      return subscription;
    },

    async ping() {
      if ((await cmd.ping()) !== 'PONG') throw new Error('bus: unexpected PING reply from redis');
    },

    // A consumer's loop retries every failure until close(): it never stops on its own.
    checkConsumers() {},

    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([...subscriptions].map((s) => s.close()));
      // QUIT on a lazy client that never connected would open a connection just to close it.
      if (cmd.status === 'wait' || !(await settleWithin([cmd.quit()], 1_000))) cmd.disconnect();
    },
  };
}
