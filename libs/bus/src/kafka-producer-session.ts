import type { ProducerBatch, RecordMetadata } from 'kafkajs';
import type { KafkaProducer } from './kafka-client';

/** What the broker says when it no longer accepts a producer id's sequence numbers: only a new id sends again. */
const LOST_SESSION = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH']);

/** Whether a send failed because its producer session is dead, looking through kafkajs's retry wrappers. */
export function lostSession(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (LOST_SESSION.has(String((e as { type?: unknown }).type))) return true;
  }
  return false;
}

/**
 * An idempotent producer's session (its producer id and the sequence number it keeps per partition), started anew
 * after any send that failed. kafkajs keeps a session for its producer's life, and after a failed send its sequence
 * numbers may no longer match the broker's: a produce the broker wrote but whose answer was lost (a broker killed
 * mid-request) leaves the broker one batch ahead. The next batch of another size is then refused, out of order, for
 * ever (every settle of the process lost until a restart); one of the same size is taken for a duplicate and
 * silently dropped. A new session (a new producer id, sequences from zero) has neither risk. What failed is
 * published again by its caller, and a record the broker did write arrives twice, which consumers already handle:
 * the bus delivers at least once, and every handler applies an event id once.
 */
export class ProducerSession {
  private producer: KafkaProducer;
  private connected?: Promise<void>;

  constructor(
    private readonly create: () => KafkaProducer,
    /** Told each time a session is given up, with the error that ended it. */
    private readonly onRenew: (err: unknown) => void = () => undefined,
  ) {
    this.producer = create();
  }

  connect(): Promise<void> {
    const producer = this.producer;
    this.connected ??= producer.connect().catch((err: unknown) => {
      if (this.producer === producer) this.connected = undefined;
      throw err;
    });
    return this.connected;
  }

  /**
   * Sends on the current session. A failure ends the session; one that says the session itself was refused is
   * sent once more at once on the new one (nothing else was wrong), anything else goes back to the caller.
   */
  async sendBatch(batch: ProducerBatch): Promise<RecordMetadata[]> {
    try {
      return await this.sendOnce(batch);
    } catch (err) {
      if (!lostSession(err)) throw err;
      return this.sendOnce(batch);
    }
  }

  async disconnect(): Promise<void> {
    if (this.connected) await this.producer.disconnect();
  }

  private async sendOnce(batch: ProducerBatch): Promise<RecordMetadata[]> {
    await this.connect();
    const producer = this.producer;
    try {
      return await producer.sendBatch(batch);
    } catch (err) {
      this.renew(producer, err);
      throw err;
    }
  }

  private renew(failed: KafkaProducer, err: unknown): void {
    if (this.producer !== failed) return;
    this.producer = this.create();
    this.connected = undefined;
    failed.disconnect().catch(() => undefined);
    this.onRenew(err);
  }
}
