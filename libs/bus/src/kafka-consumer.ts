import type { EachMessageHandler } from 'kafkajs';
import type { Handler } from './port';
import type { BusErrorHandler } from './errors';
import { fromKafkaMessage, type DeadLetter } from './kafka-codec';

export type RetryDecision = 'retry' | 'dead-letter';

/** Handler failures per message, keyed by topic/partition/offset. */
export class FailureCounts {
  private readonly counts = new Map<string, number>();

  constructor(private readonly maxAttempts: number) {}

  /** The last allowed attempt gives up on the message, and forgets it. */
  failed(where: string): RetryDecision {
    const n = (this.counts.get(where) ?? 0) + 1;
    if (n >= this.maxAttempts) {
      this.counts.delete(where);
      return 'dead-letter';
    }
    this.counts.set(where, n);
    return 'retry';
  }

  succeeded(where: string): void {
    this.counts.delete(where);
  }

  /** After a rebalance another member may own those partitions; counts for them would only leak. */
  clear(): void {
    this.counts.clear();
  }
}

export interface MessageHandlerConfig {
  group: string;
  handler: Handler;
  /** Handler calls per message before it is dead-lettered. */
  maxAttempts: number;
  /** Sends the dead letter; the offset is committed only once this resolved. */
  deadLetter(d: DeadLetter): Promise<void>;
  onError: BusErrorHandler;
}

/**
 * kafkajs commits a message's offset once eachMessage resolves, and fetches it again when it throws; this decides
 * which. A handler failure throws (redelivery) until the attempts run out; then the message is dead-lettered and
 * eachMessage resolves, so one poison message cannot stall its partition forever.
 */
export function messageHandler(c: MessageHandlerConfig): { eachMessage: EachMessageHandler; rebalanced(): void } {
  const failures = new FailureCounts(Math.max(1, c.maxAttempts));

  async function deadLetter(d: DeadLetter): Promise<void> {
    await c.deadLetter(d);
    c.onError(d.error, { adapter: 'kafka', action: 'dead-lettered', topic: d.topic, group: c.group, event: d.event });
  }

  const eachMessage: EachMessageHandler = async ({ topic, partition, message }) => {
    const read = fromKafkaMessage(message);
    if ('error' in read) return deadLetter({ topic, group: c.group, raw: read.raw, error: read.error });
    const { event, raw } = read;
    const where = `${topic}/${partition}/${message.offset}`;
    try {
      await c.handler(event, topic);
      failures.succeeded(where);
    } catch (error) {
      if (failures.failed(where) === 'dead-letter') return deadLetter({ topic, group: c.group, raw, error, event });
      c.onError(error, { adapter: 'kafka', action: 'will-retry', topic, group: c.group, event });
      throw error;
    }
  };

  return { eachMessage, rebalanced: () => failures.clear() };
}
