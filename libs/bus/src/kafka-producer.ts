import type { Message } from 'kafkajs';
import type { KafkaProducer } from './kafka-client';

interface Pending {
  topic: string;
  message: Message;
  bytes: number;
  resolve(): void;
  reject(err: unknown): void;
}

export interface BatchLimits {
  /**
   * Bytes of one produce request, counted as its records' keys, values and headers. A broker refuses a partition's
   * record batch above its max.message.bytes (1 MB by default) whole, so a backlog sent as one request could fail
   * whole, and fail again on each retry. Default 512 KiB. A single larger record still goes, alone.
   */
  maxBytes: number;
  /** Records in one produce request. Default 1000. */
  maxMessages: number;
}

const DEFAULT_LIMITS: BatchLimits = { maxBytes: 512 * 1024, maxMessages: 1_000 };

const size = (v: Buffer | string | null | undefined) => (v == null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length);

/** A record's bytes as the bounds count them: what it carries, plus a little for its framing. */
export function recordBytes(m: Message): number {
  let n = 16 + size(m.key) + size(m.value);
  for (const [k, v] of Object.entries(m.headers ?? {})) n += Buffer.byteLength(k) + (Array.isArray(v) ? v.reduce((a, x) => a + size(x), 0) : size(v));
  return n;
}

/**
 * Coalesces the publishes of one event-loop turn into sendBatch calls bounded by `BatchLimits`, and keeps one batch
 * in flight at a time. One-at-a-time is what keeps a key's events in order when the client retries a failed
 * request; batching is what makes that affordable at thousands of publishes per second. The bounds keep what piled
 * up during a broker stall from going out as one request too large for the broker.
 */
export class BatchingProducer {
  private queue: Pending[] = [];
  private flushing?: Promise<void>;

  private readonly limits: BatchLimits;

  constructor(
    private readonly producer: Pick<KafkaProducer, 'sendBatch'>,
    private readonly connect: () => Promise<void>,
    limits: Partial<BatchLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  send(topic: string, message: Message): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ topic, message, bytes: recordBytes(message), resolve, reject });
      if (!this.flushing) this.flushing = new Promise((r) => setImmediate(r)).then(() => this.drain());
    });
  }

  /** Resolves once everything queued so far has been sent or has failed. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  /** How many of the queue's first records fit in one batch: at least one. */
  private fitting(): number {
    let n = 0;
    let bytes = 0;
    for (const p of this.queue) {
      if (n > 0 && (n >= this.limits.maxMessages || bytes + p.bytes > this.limits.maxBytes)) break;
      n++;
      bytes += p.bytes;
    }
    return n;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length) {
        const batch = this.queue.splice(0, this.fitting());
        try {
          await this.connect();
          const byTopic = new Map<string, Message[]>();
          for (const p of batch) {
            const list = byTopic.get(p.topic);
            if (list) list.push(p.message);
            else byTopic.set(p.topic, [p.message]);
          }
          await this.producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
          for (const p of batch) p.resolve();
        } catch (err) {
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      this.flushing = undefined;
    }
  }
}
