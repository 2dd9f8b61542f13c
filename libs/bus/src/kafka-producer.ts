import type { Message } from 'kafkajs';
import type { KafkaProducer } from './kafka-client';

interface Pending {
  topic: string;
  message: Message;
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Coalesces the publishes of one event-loop turn into a single sendBatch, and keeps one batch in flight at a time.
 * One-at-a-time is what keeps a key's events in order when the client retries a failed request; batching is what
 * makes that affordable at thousands of publishes per second.
 */
export class BatchingProducer {
  private queue: Pending[] = [];
  private flushing?: Promise<void>;

  constructor(
    private readonly producer: Pick<KafkaProducer, 'sendBatch'>,
    private readonly connect: () => Promise<void>,
  ) {}

  send(topic: string, message: Message): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ topic, message, resolve, reject });
      if (!this.flushing) this.flushing = new Promise((r) => setImmediate(r)).then(() => this.drain());
    });
  }

  /** Resolves once everything queued so far has been sent or has failed. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length) {
        const batch = this.queue;
        this.queue = [];
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
