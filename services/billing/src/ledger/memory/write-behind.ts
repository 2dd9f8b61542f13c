import type { Db } from '@gateway/db';
import type { Logger } from '@gateway/service-kit';
import { encodeBatch } from './batch-wire';
import type { DeadLetters } from './dead-letters';
import { type LedgerRecord, toBatch } from './records';
import { MalformedRecords, cannotApply } from './unappliable';

const MAX_BATCH = 5_000;
/** A failure the tables may get over (unappliable.ts) is retried after this, doubling up to MAX_RETRY_MS. */
const RETRY_MS = 200;
const MAX_RETRY_MS = 10_000;
/**
 * How long records gather before a batch is written, unless a reader is waiting for them. The journal already
 * makes them durable, so the delay costs no safety. A batch costs about 4 ms however small (ledger_write's
 * replica role makes PGlite plan its statements afresh) plus some 35 µs per request, so at 2,000 requests/s
 * batches of 150 ms cost the write-behind's thread about a third less per request than batches of 50 ms, and on
 * two cores that thread's time is taken from the requests (pnpm bench ab: 4-5 % less CPU per request).
 */
const GATHER_MS = 150;

/** Applies records (from, to] to the tables in one transaction; records the tables already hold change nothing. */
export async function writeBatch(db: Db, from: number, records: LedgerRecord[]): Promise<void> {
  let to: number;
  let body: string;
  try {
    const b = toBatch(from, records);
    to = b.to;
    body = encodeBatch(b.body);
  } catch (err) {
    throw new MalformedRecords(err);
  }
  await db.query('SELECT ledger_write($1, $2, $3::jsonb)', [from, to, body]);
}

/**
 * Writes the in-memory ledger's records behind it into the tables that admin, account and generation routes read,
 * one batch per round: whatever queued while the previous batch ran, or during the gathering delay, goes in the next.
 * On PGlite the batch runs in its worker thread, so the request path never waits for it. ledger_write is
 * exactly-once by sequence number, so a batch that failed is written again as it was.
 *
 * No record can stop it. A failure the tables may get over (a lost connection) is retried with capped backoff. A
 * batch refused for good (unappliable.ts) is halved until the record is found, which is dead-lettered
 * (dead-letters.ts), with the later records of its hold; then it goes on, and memory reloads from the tables
 * (`onRefused`) to agree with them again. The start's journal replay runs through the same object.
 */
export class WriteBehind {
  private queue: LedgerRecord[] = [];
  private running: Promise<void> | undefined;
  private waiters: { seq: number; resolve: () => void }[] = [];
  private gathering: { timer: NodeJS.Timeout; done: () => void } | undefined;
  /** While a refused batch's record is looked for: rounds up to `narrowUntil` write at most `narrowTo` records. */
  private narrowTo = MAX_BATCH;
  private narrowUntil = 0;
  private failures = 0;
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly db: Db,
    private appliedSeq: number,
    private readonly logger: Logger,
    private readonly deadLetters: DeadLetters,
    /** Told after each batch commits, with the records it held (dead letters included: their seq is consumed). */
    private readonly onApplied: (appliedSeq: number, records: LedgerRecord[]) => void,
    /** Told of a record the tables refused for good; memory no longer matches them. */
    private readonly onRefused: (record: LedgerRecord) => void = () => {},
  ) {}

  get applied(): number {
    return this.appliedSeq;
  }

  push(record: LedgerRecord): void {
    this.queue.push(record);
    if (!this.running && !this.closed) this.running = this.pump();
  }

  /** Resolves once every record pushed before the call is in the tables (or dead-lettered). */
  flushed(): Promise<void> {
    const last = this.queue.at(-1)?.seq;
    if (last === undefined && !this.running) return Promise.resolve();
    const seq = last ?? this.appliedSeq + 1;
    if (seq <= this.appliedSeq) return Promise.resolve();
    const applied = new Promise<void>((resolve) => this.waiters.push({ seq, resolve }));
    this.stopGathering();
    return applied;
  }

  /** Stops writing (at shutdown, once waiting longer is pointless): what is left stays in the journal for the next start. */
  close(): void {
    this.closed = true;
    this.stopGathering();
    this.wake?.();
  }

  private stopGathering(): void {
    if (!this.gathering) return;
    clearTimeout(this.gathering.timer);
    this.gathering.done();
    this.gathering = undefined;
  }

  /** Waits GATHER_MS for more records, or less when a reader asks for them meanwhile. */
  private gather(): Promise<void> {
    if (this.waiters.length > 0) return new Promise<void>((r) => setImmediate(r));
    return new Promise<void>((done) => {
      this.gathering = { timer: setTimeout(() => this.stopGathering(), GATHER_MS), done };
    });
  }

  private async pump(): Promise<void> {
    while (this.queue.length > 0 && !this.closed) {
      // A retry or a search for a refused record goes at once: readers are waiting behind it.
      if (this.failures === 0 && this.appliedSeq >= this.narrowUntil) await this.gather();
      if (this.closed) break;
      try {
        await this.round();
        this.failures = 0;
      } catch (err) {
        this.failures++;
        const retryInMs = Math.min(RETRY_MS * 2 ** (this.failures - 1), MAX_RETRY_MS);
        this.logger.error({ err, from: this.appliedSeq, attempt: this.failures, retryInMs }, 'ledger write-behind failed; retrying');
        await this.sleep(retryInMs);
      }
    }
    this.running = undefined;
    if (!this.closed) for (const w of this.waiters.splice(0)) w.resolve();
  }

  /** Writes the head of the queue: a batch, or one record the tables refuse, or one that depends on such a record. */
  private async round(): Promise<void> {
    const head = this.queue[0];
    const dependsOn = this.deadLetters.dependsOn(head);
    if (dependsOn !== undefined) {
      await this.deadLetters.put(this.appliedSeq, head, { dependsOn });
      this.markApplied([head]);
      return;
    }
    const batch = this.nextBatch();
    try {
      await writeBatch(this.db, this.appliedSeq, batch);
    } catch (err) {
      if (!cannotApply(err)) throw err;
      if (batch.length > 1) {
        // Some record in it is refused for good: the first half goes next, and so on down to the record.
        this.narrowTo = Math.ceil(batch.length / 2);
        this.narrowUntil = Math.max(this.narrowUntil, batch[batch.length - 1].seq);
        return;
      }
      await this.deadLetters.put(this.appliedSeq, head, { error: err });
      // Found: the rest is written in whole batches again (another refused record in it is looked for the same way).
      this.narrowUntil = 0;
      this.markApplied(batch);
      this.onRefused(head);
      return;
    }
    this.markApplied(batch);
  }

  /** The head of the queue up to the batch limit, ending before the first record that depends on a dead letter. */
  private nextBatch(): LedgerRecord[] {
    const limit = this.appliedSeq < this.narrowUntil ? this.narrowTo : MAX_BATCH;
    const batch = this.queue.slice(0, limit);
    const cut = batch.findIndex((r, i) => i > 0 && this.deadLetters.dependsOn(r) !== undefined);
    return cut < 0 ? batch : batch.slice(0, cut);
  }

  /** The tables hold `records` (the head of the queue) now. */
  private markApplied(records: LedgerRecord[]): void {
    this.queue = this.queue.slice(records.length);
    this.appliedSeq = records[records.length - 1].seq;
    while (this.waiters.length > 0 && this.waiters[0].seq <= this.appliedSeq) this.waiters.shift()?.resolve();
    this.onApplied(this.appliedSeq, records);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
