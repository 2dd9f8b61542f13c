import type { Db } from '@gateway/db';
import type { Logger } from '@gateway/service-kit';
import { encodeBatch } from './batch-wire';
import { type LedgerRecord, toBatch } from './records';

const MAX_BATCH = 5_000;
const RETRY_MS = 200;
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
  const b = toBatch(from, records);
  await db.query('SELECT ledger_write($1, $2, $3::jsonb)', [b.from, b.to, encodeBatch(b.body)]);
}

/**
 * Writes the in-memory ledger's records behind it into the tables that admin, account and generation routes read,
 * one batch per round: whatever queued while the previous batch ran, or during the gathering delay, goes in the next. On PGlite the batch runs in
 * its worker thread, so the request path never waits for it. A failed batch is retried as it was (ledger_write is
 * exactly-once by sequence number), never skipped.
 */
export class WriteBehind {
  private queue: LedgerRecord[] = [];
  private running: Promise<void> | undefined;
  private waiters: { seq: number; resolve: () => void }[] = [];
  private gathering: { timer: NodeJS.Timeout; done: () => void } | undefined;

  constructor(
    private readonly db: Db,
    private appliedSeq: number,
    private readonly logger: Logger,
    /** Told after each batch commits, with the records it held. */
    private readonly onApplied: (appliedSeq: number, records: LedgerRecord[]) => void,
    /** Told of a record the tables refused for good (see isolate); memory no longer matches them. */
    private readonly onRefused: (record: LedgerRecord) => void = () => {},
  ) {}

  get applied(): number {
    return this.appliedSeq;
  }

  push(record: LedgerRecord): void {
    this.queue.push(record);
    if (!this.running) this.running = this.pump();
  }

  /** Resolves once every record pushed before the call is in the tables. */
  flushed(): Promise<void> {
    const last = this.queue.at(-1)?.seq;
    if (last === undefined && !this.running) return Promise.resolve();
    const seq = last ?? this.appliedSeq + 1;
    if (seq <= this.appliedSeq) return Promise.resolve();
    const applied = new Promise<void>((resolve) => this.waiters.push({ seq, resolve }));
    this.stopGathering();
    return applied;
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
    while (this.queue.length > 0) {
      await this.gather();
      const batch = this.queue.slice(0, MAX_BATCH);
      try {
        try {
          await writeBatch(this.db, this.appliedSeq, batch);
          this.markApplied(batch);
        } catch (err) {
          if (!refusedForGood(err)) throw err;
          await this.isolate(batch);
        }
      } catch (err) {
        this.logger.error({ err, from: this.appliedSeq, records: batch.length }, 'ledger write-behind failed; retrying');
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
    this.running = undefined;
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  /** The tables hold `records` (the head of the queue) now. */
  private markApplied(records: LedgerRecord[]): void {
    this.queue = this.queue.slice(records.length);
    this.appliedSeq = records[records.length - 1].seq;
    while (this.waiters.length > 0 && this.waiters[0].seq <= this.appliedSeq) this.waiters.shift()?.resolve();
    this.onApplied(this.appliedSeq, records);
  }

  /**
   * A batch the tables refused with an integrity error (a decision memory should never have made, such as a hold
   * for a request id closed long ago): retrying it would fail forever and every reader would wait forever. Each
   * record is written alone; one refused alone is skipped, its sequence number consumed by an empty write, and
   * reported, so memory can reload from the tables and agree with them again.
   */
  private async isolate(batch: LedgerRecord[]): Promise<void> {
    for (const r of batch) {
      try {
        await writeBatch(this.db, this.appliedSeq, [r]);
      } catch (err) {
        if (!refusedForGood(err)) throw err;
        this.logger.error({ err, seq: r.seq, record: r.t, holdId: r.h.id, requestId: r.h.request }, 'ledger record refused by the tables; skipped');
        await this.db.query('SELECT ledger_write($1, $2, $3::jsonb)', [this.appliedSeq, r.seq, '{}']);
        this.onRefused(r);
      }
      this.markApplied([r]);
    }
  }
}

/** SQLSTATE class 23, integrity constraint violation: the same write fails the same way every time. */
const refusedForGood = (err: unknown) => /^23/.test(String((err as { code?: unknown }).code ?? ''));
