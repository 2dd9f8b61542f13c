import fs from 'node:fs';
import path from 'node:path';
import type { LedgerRecord } from './records';

/** Where the embedded ledger's records become durable before the tables have them. */
export interface Journal {
  /** False from the first failed write or sync on: nothing appended since can be made durable (`fail`). */
  readonly healthy: boolean;
  /** Throws once the journal has failed: its caller must not act on a decision it cannot record. */
  append(record: LedgerRecord): void;
  /** Resolves once the record `seq` (and so every earlier one) is on disk. */
  durable(seq: number): Promise<void>;
  /** The tables hold every record up to `seq`: segments wholly before it can go. */
  retire(seq: number): void;
  close(): Promise<void>;
}

/** The database lives in memory (tests): durability is theirs to lose, so the journal is none. */
export const noJournal: Journal = { healthy: true, append() {}, durable: async () => {}, retire() {}, close: async () => {} };

const SEGMENT_BYTES = 8 * 2 ** 20;
/**
 * The longest a record nobody waits for (a hold) stays in memory before it is written. A hold needs no sync of its
 * own: the settle that follows waits for one, and that sync carries the hold too, being earlier in the same file.
 */
const IDLE_WRITE_MS = 10;
/**
 * The least time from one sync's start to the next. Settles waiting meanwhile share the next sync, so a busy or a
 * one-connection load pays for at most one thread-pool hand-off and one disk flush per gap, not one per request
 * (docs/benchmarks.md). It delays only the bus's acknowledgement: the record is in the file before anyone waits.
 */
const SYNC_GAP_MS = 2;
const segmentName = (firstSeq: number) => `seg-${String(firstSeq).padStart(16, '0')}.jsonl`;
/** The next segment, made whole ahead of its use; not a `seg-` file, so nothing reads it as records. */
const SPARE_NAME = 'spare.jsonl';

export interface FileJournalOptions {
  /** For tests, which roll segments with a few records. */
  segmentBytes?: number;
  syncGapMs?: number;
  /** The disk flush; a test's stand-in holds it back or fails it. */
  datasync?: (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void;
  /** Told once, at the journal's first failure. */
  onFail?: (err: unknown) => void;
}

/** What `append` and `durable` answer once the journal has failed; `cause` is the write's or the sync's error. */
export class JournalFailed extends Error {
  constructor(cause: unknown) {
    super(`the ledger journal failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'JournalFailed';
  }
}

/** The records a previous process journalled, in order; a torn last line (a kill mid-write) is left out. */
export function readJournal(dir: string): LedgerRecord[] {
  if (!fs.existsSync(dir)) return [];
  const out: LedgerRecord[] = [];
  for (const name of fs
    .readdirSync(dir)
    .filter((n) => n.startsWith('seg-'))
    .sort()) {
    const bytes = fs.readFileSync(path.join(dir, name));
    // Records overwrite a segment's zeros: the first zero byte is where its writing stopped (JSON never has one raw).
    // Only the bytes before it are decoded, not the megabytes of zeros after.
    const end = bytes.indexOf(0);
    for (const line of bytes.toString('utf8', 0, end < 0 ? bytes.length : end).split('\n')) {
      if (!line) continue;
      try {
        out.push(JSON.parse(line) as LedgerRecord);
      } catch {
        // Only the last write of a killed process can be torn (on a power cut even inside it), and nothing after it was
        // acknowledged.
        break;
      }
    }
  }
  return out;
}

/**
 * An append-only log in two steps. A record is written into the file on the event loop in the turn after a settle
 * starts waiting for it (a hold nobody waits for, within IDLE_WRITE_MS): a write to the page cache of a few
 * microseconds, shared by every record of that turn, after which a `kill -9` no longer loses it. It becomes durable
 * against a power cut at the next `fdatasync`, run on the thread pool at most once per SYNC_GAP_MS and shared by every
 * record written before it started (group commit); `durable()` resolves then. Segments roll at 8 MiB and are deleted
 * once ledger_write has applied all they hold, so the journal only ever holds what the tables lack.
 *
 * Each segment is made whole before its first record: written full of zeros and synced, then overwritten in order.
 * A write inside a file's size changes no metadata the data needs, so a sync is the data and a cache flush; an
 * append made the file system commit the file's new size as well, every time: a quarter to a half more wall time and
 * about 30 % more CPU per commit on this project's VM (docs/benchmarks.md). PostgreSQL zero-fills its WAL for this
 * reason. It also keeps a power cut's damage readable: pages that never reached the disk read as zeros, where reading
 * stops.
 */
export class FileJournal implements Journal {
  private buffered: string[] = [];
  private bufferedSeq: number;
  /** In the file, so a kill of this process cannot lose it; not yet past a power cut. */
  private writtenSeq: number;
  private durableSeq: number;
  private waiters: { seq: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private syncing: Promise<void> | undefined;
  private syncTimer: NodeJS.Timeout | undefined;
  private lastSyncAt = 0;
  /** While a roll runs, records wait in `buffered`: the new segment is not open yet. */
  private rolling: Promise<void> | undefined;
  private segments: { file: string; lastSeq: number }[] = [];
  private current!: { file: string; fd: number; bytes: number; lastSeq: number };
  /** The next segment being zero-filled, started once the current one is half full; false if that failed. */
  private spare: Promise<boolean> | undefined;
  /** Set at the first failure, for good: see `fail`. */
  private failed: JournalFailed | undefined;
  private idle: NodeJS.Timeout | undefined;
  private nextTurn: NodeJS.Immediate | undefined;
  private readonly segmentBytes: number;
  private readonly syncGapMs: number;
  private readonly datasync: NonNullable<FileJournalOptions['datasync']>;
  private readonly onFail: FileJournalOptions['onFail'];

  private constructor(
    private readonly dir: string,
    startSeq: number,
    opts: FileJournalOptions,
  ) {
    this.durableSeq = startSeq;
    this.writtenSeq = startSeq;
    this.bufferedSeq = startSeq;
    this.segmentBytes = opts.segmentBytes ?? SEGMENT_BYTES;
    this.syncGapMs = opts.syncGapMs ?? SYNC_GAP_MS;
    this.datasync = opts.datasync ?? fs.fdatasync;
    this.onFail = opts.onFail;
  }

  /** A fresh journal after `startSeq` (earlier segments were replayed into the tables and are removed). */
  static async open(dir: string, startSeq: number, opts: FileJournalOptions = {}): Promise<FileJournal> {
    fs.mkdirSync(dir, { recursive: true });
    for (const name of fs.readdirSync(dir)) if (name.startsWith('seg-') || name === SPARE_NAME) fs.rmSync(path.join(dir, name));
    const j = new FileJournal(dir, startSeq, opts);
    await j.roll(startSeq + 1);
    return j;
  }

  get healthy(): boolean {
    return this.failed === undefined;
  }

  append(record: LedgerRecord): void {
    // Nothing would ever write it: buffering on would only grow memory for as long as the process runs.
    if (this.failed) throw this.failed;
    this.buffered.push(`${JSON.stringify(record)}\n`);
    this.bufferedSeq = record.seq;
    if (!this.idle) this.idle = setTimeout(() => this.writeOut(), IDLE_WRITE_MS);
  }

  durable(seq: number): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (seq <= this.durableSeq) return Promise.resolve();
    const synced = new Promise<void>((resolve, reject) => this.waiters.push({ seq, resolve, reject }));
    // Every settle of this loop turn goes out in one write: under load, one system call on the loop for many.
    this.nextTurn ??= setImmediate(() => {
      this.nextTurn = undefined;
      this.writeOut();
      this.scheduleSync();
    });
    return synced;
  }

  retire(seq: number): void {
    while (this.segments.length > 0 && this.segments[0].lastSeq <= seq) {
      fs.promises.rm(this.segments[0].file, { force: true }).catch(() => {});
      this.segments.shift();
    }
  }

  async close(): Promise<void> {
    if (this.nextTurn) clearImmediate(this.nextTurn);
    this.nextTurn = undefined;
    this.writeOut();
    while (this.rolling || this.syncing) await (this.rolling ?? this.syncing);
    if (this.syncTimer) clearTimeout(this.syncTimer);
    this.syncTimer = undefined;
    if (!this.failed && this.writtenSeq > this.durableSeq) await this.syncCurrent();
    await this.spare;
    fs.closeSync(this.current.fd);
  }

  /** Puts what is buffered into the current segment, synchronously: from here a kill of this process cannot lose it. */
  private writeOut(): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = undefined;
    if (this.rolling || this.failed || this.buffered.length === 0) return;
    const chunk = Buffer.from(this.buffered.join(''));
    // A chunk goes whole into one segment; one larger than a segment grows its file past the zeros, correctly.
    if (this.current.bytes > 0 && this.current.bytes + chunk.length > this.segmentBytes) {
      this.rolling = this.roll(this.writtenSeq + 1).then(
        () => {
          this.rolling = undefined;
          this.writeOut();
          this.scheduleSync();
        },
        (e) => {
          this.rolling = undefined;
          this.fail(e);
        },
      );
      return;
    }
    const upTo = this.bufferedSeq;
    this.buffered = [];
    try {
      for (let done = 0; done < chunk.length; ) done += fs.writeSync(this.current.fd, chunk, done, chunk.length - done, this.current.bytes + done);
    } catch (e) {
      this.fail(e);
      return;
    }
    this.current.bytes += chunk.length;
    this.current.lastSeq = upTo;
    this.writtenSeq = upTo;
    if (!this.spare && this.current.bytes * 2 >= this.segmentBytes) {
      this.spare = this.makeSpare().then(
        () => true,
        () => false,
      );
    }
  }

  /** Starts the next sync now, or when the gap since the last one has passed, if anyone waits for one. */
  private scheduleSync(): void {
    if (this.syncing || this.syncTimer || this.rolling || this.failed || this.waiters.length === 0) return;
    const wait = this.lastSyncAt + this.syncGapMs - performance.now();
    if (wait > 0) {
      this.syncTimer = setTimeout(() => {
        this.syncTimer = undefined;
        this.scheduleSync();
      }, wait);
      return;
    }
    this.lastSyncAt = performance.now();
    this.syncing = this.syncCurrent().then(
      () => {
        this.syncing = undefined;
        this.scheduleSync();
      },
      (e) => {
        this.syncing = undefined;
        this.fail(e);
      },
    );
  }

  /** Flushes the current segment and resolves everyone waiting for a record written before the flush began. */
  private syncCurrent(): Promise<void> {
    const upTo = this.writtenSeq;
    return new Promise<void>((resolve, reject) => this.datasync(this.current.fd, (err) => (err ? reject(err) : resolve()))).then(() => {
      this.durableSeq = Math.max(this.durableSeq, upTo);
      while (this.waiters.length > 0 && this.waiters[0].seq <= this.durableSeq) this.waiters.shift()?.resolve();
    });
  }

  /**
   * A full or failing disk: settles are no longer durable, and waiting for them must say so. For good, as
   * PostgreSQL's PANIC on a failed fsync: after a failed `fdatasync` the kernel may have dropped the dirty pages and
   * cleared the error, so a later sync that succeeds proves nothing about the records before it. What was not written
   * is dropped (none of it was acknowledged); a restart replays what the file holds and starts a fresh segment.
   */
  private fail(e: unknown): void {
    if (this.failed) return;
    this.failed = new JournalFailed(e);
    this.buffered = [];
    for (const w of this.waiters.splice(0)) w.reject(this.failed);
    this.onFail?.(e);
  }

  /** Writes the spare segment full of zeros and syncs it, so no write to it later changes its size. */
  private async makeSpare(): Promise<void> {
    const zeros = Buffer.alloc(Math.min(2 ** 20, this.segmentBytes));
    const fd = await fs.promises.open(path.join(this.dir, SPARE_NAME), 'w');
    try {
      for (let at = 0; at < this.segmentBytes; at += zeros.length) await fd.write(zeros, 0, Math.min(zeros.length, this.segmentBytes - at), at);
      await fd.sync();
    } finally {
      await fd.close();
    }
  }

  private async roll(firstSeq: number): Promise<void> {
    if (this.current) {
      // The new segment's syncs do not cover this one: what it holds is made durable before it is left.
      while (this.syncing) await this.syncing;
      if (this.writtenSeq > this.durableSeq) await this.syncCurrent();
      fs.closeSync(this.current.fd);
      this.segments.push({ file: this.current.file, lastSeq: this.current.lastSeq });
    }
    const ready = this.spare ? await this.spare : false;
    this.spare = undefined;
    // A spare that failed in the background is made again here: its error then stops the journal, as a failed write would.
    if (!ready) await this.makeSpare();
    const file = path.join(this.dir, segmentName(firstSeq));
    await fs.promises.rename(path.join(this.dir, SPARE_NAME), file);
    const fd = fs.openSync(file, 'r+');
    // The segment's name must survive a crash too, or its records would be unreachable.
    const dirFd = await fs.promises.open(this.dir, 'r');
    await dirFd.sync().finally(() => dirFd.close());
    this.current = { file, fd, bytes: 0, lastSeq: firstSeq - 1 };
  }
}
