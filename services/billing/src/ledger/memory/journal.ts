import fs from 'node:fs';
import path from 'node:path';
import type { LedgerRecord } from './records';

/** Where the embedded ledger's records become durable before the tables have them. */
export interface Journal {
  append(record: LedgerRecord): void;
  /** Resolves once the record `seq` (and so every earlier one) is on disk. */
  durable(seq: number): Promise<void>;
  /** The tables hold every record up to `seq`: segments wholly before it can go. */
  retire(seq: number): void;
  close(): Promise<void>;
}

/** The database lives in memory (tests): durability is theirs to lose, so the journal is none. */
export const noJournal: Journal = { append() {}, durable: async () => {}, retire() {}, close: async () => {} };

const SEGMENT_BYTES = 8 * 2 ** 20;
/**
 * The longest a record nobody waits for (a hold) stays in memory before it is written. A hold needs no sync of its
 * own: the settle that follows waits for one, and that sync carries the hold too, being later in the same file.
 */
const IDLE_WRITE_MS = 10;
const segmentName = (firstSeq: number) => `seg-${String(firstSeq).padStart(16, '0')}.jsonl`;
/** The next segment, made whole ahead of its use; not a `seg-` file, so nothing reads it as records. */
const SPARE_NAME = 'spare.jsonl';
/**
 * Segments open with O_DSYNC where the platform has it: each write returns once its data is on disk, so a commit is
 * one call to the thread pool instead of a write and an fdatasync. On a small VM every such hand-off costs the event
 * loop about 50 µs and the commit about 200 µs of wall time (docs/benchmarks.md). Elsewhere (Windows) the journal
 * syncs after each write as before.
 */
const DSYNC = fs.constants.O_DSYNC;
const SEGMENT_FLAGS = DSYNC ? fs.constants.O_WRONLY | DSYNC : 'r+';

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
 * An append-only log with group commit: records appended while one write runs go out together in the next, so a
 * settle waits for at most two syncs however many arrive at once. Segments roll at 8 MiB and are deleted once
 * ledger_write has applied all they hold, so the journal only ever holds what the tables lack.
 *
 * Each segment is made whole before its first record: written full of zeros and synced, then overwritten in order.
 * A write inside a file's size changes no metadata the data needs, so a commit is the data and a cache flush; an
 * append made the file system commit the file's new size as well, every time: a quarter to a half more wall time and
 * about 30 % more CPU per commit on this project's VM (docs/benchmarks.md). PostgreSQL zero-fills its WAL for this
 * reason.
 */
export class FileJournal implements Journal {
  private buffered: string[] = [];
  private bufferedSeq = 0;
  private durableSeq: number;
  private waiters: { seq: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private writing: Promise<void> | undefined;
  private segments: { file: string; lastSeq: number }[] = [];
  private current!: { file: string; fd: fs.promises.FileHandle; bytes: number; lastSeq: number };
  /** The next segment being zero-filled, started once the current one is half full; false if that failed. */
  private spare: Promise<boolean> | undefined;
  private failed: unknown;
  private idle: NodeJS.Timeout | undefined;

  private constructor(
    private readonly dir: string,
    startSeq: number,
    private readonly segmentBytes: number,
  ) {
    this.durableSeq = startSeq;
    this.bufferedSeq = startSeq;
  }

  /**
   * A fresh journal after `startSeq` (earlier segments were replayed into the tables and are removed).
   * `segmentBytes` is for tests, which roll segments with a few records.
   */
  static async open(dir: string, startSeq: number, opts: { segmentBytes?: number } = {}): Promise<FileJournal> {
    fs.mkdirSync(dir, { recursive: true });
    for (const name of fs.readdirSync(dir)) if (name.startsWith('seg-') || name === SPARE_NAME) fs.rmSync(path.join(dir, name));
    const j = new FileJournal(dir, startSeq, opts.segmentBytes ?? SEGMENT_BYTES);
    await j.roll(startSeq + 1);
    return j;
  }

  append(record: LedgerRecord): void {
    this.buffered.push(`${JSON.stringify(record)}\n`);
    this.bufferedSeq = record.seq;
    if (!this.writing && !this.idle) this.idle = setTimeout(() => this.kick(), IDLE_WRITE_MS);
  }

  durable(seq: number): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (seq <= this.durableSeq) return Promise.resolve();
    const written = new Promise<void>((resolve, reject) => this.waiters.push({ seq, resolve, reject }));
    this.kick();
    return written;
  }

  private kick(): void {
    if (this.idle) clearTimeout(this.idle);
    this.idle = undefined;
    if (!this.writing && this.buffered.length > 0) this.writing = this.pump();
  }

  retire(seq: number): void {
    while (this.segments.length > 0 && this.segments[0].lastSeq <= seq) {
      fs.promises.rm(this.segments[0].file, { force: true }).catch(() => {});
      this.segments.shift();
    }
  }

  async close(): Promise<void> {
    this.kick();
    await this.writing;
    await this.spare;
    await this.current.fd.close();
  }

  private async pump(): Promise<void> {
    try {
      while (this.buffered.length > 0) {
        const chunk = Buffer.from(this.buffered.join(''));
        const upTo = this.bufferedSeq;
        this.buffered = [];
        // A chunk goes whole into one segment; one larger than a segment grows its file past the zeros, correctly.
        if (this.current.bytes > 0 && this.current.bytes + chunk.length > this.segmentBytes) await this.roll(this.durableSeq + 1);
        await this.current.fd.write(chunk, 0, chunk.length, this.current.bytes);
        if (!DSYNC) await this.current.fd.datasync();
        this.current.bytes += chunk.length;
        this.current.lastSeq = upTo;
        this.durableSeq = upTo;
        while (this.waiters.length > 0 && this.waiters[0].seq <= upTo) this.waiters.shift()?.resolve();
        if (!this.spare && this.current.bytes * 2 >= this.segmentBytes) {
          this.spare = this.makeSpare().then(
            () => true,
            () => false,
          );
        }
      }
    } catch (e) {
      // A full or failing disk: settles are no longer durable, and waiting for them must say so.
      this.failed = e;
      for (const w of this.waiters.splice(0)) w.reject(e);
    } finally {
      this.writing = undefined;
    }
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
      await this.current.fd.close();
      this.segments.push({ file: this.current.file, lastSeq: this.current.lastSeq });
    }
    const ready = this.spare ? await this.spare : false;
    this.spare = undefined;
    // A spare that failed in the background is made again here: its error then stops the journal, as a failed write would.
    if (!ready) await this.makeSpare();
    const file = path.join(this.dir, segmentName(firstSeq));
    await fs.promises.rename(path.join(this.dir, SPARE_NAME), file);
    const fd = await fs.promises.open(file, SEGMENT_FLAGS);
    // The segment's name must survive a crash too, or its records would be unreachable.
    const dirFd = await fs.promises.open(this.dir, 'r');
    await dirFd.sync().finally(() => dirFd.close());
    this.current = { file, fd, bytes: 0, lastSeq: firstSeq - 1 };
  }
}
