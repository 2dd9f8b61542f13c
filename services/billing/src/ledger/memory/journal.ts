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
/**
 * Segments open with O_DSYNC where the platform has it: each write returns once its data is on disk, so a commit is
 * one call to the thread pool instead of a write and an fdatasync. On a small VM every such hand-off costs the event
 * loop about 50 µs and the commit about 200 µs of wall time (docs/benchmarks.md). Elsewhere (Windows) the journal
 * syncs after each write as before.
 */
const DSYNC = fs.constants.O_DSYNC;
const SEGMENT_FLAGS = DSYNC ? fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_APPEND | DSYNC : 'a';

/** The records a previous process journalled, in order; a torn last line (a kill mid-write) is left out. */
export function readJournal(dir: string): LedgerRecord[] {
  if (!fs.existsSync(dir)) return [];
  const out: LedgerRecord[] = [];
  for (const name of fs
    .readdirSync(dir)
    .filter((n) => n.startsWith('seg-'))
    .sort()) {
    const lines = fs.readFileSync(path.join(dir, name), 'utf8').split('\n');
    for (const line of lines) {
      if (!line) continue;
      try {
        out.push(JSON.parse(line) as LedgerRecord);
      } catch {
        // Only the last write of a killed process can be torn, and nothing after it was acknowledged.
        break;
      }
    }
  }
  return out;
}

/**
 * An append-only file with group commit: records appended while one write-and-fdatasync runs go out together in
 * the next, so a settle waits for at most two syncs however many arrive at once. Segments roll at 8 MiB and are
 * deleted once ledger_write has applied all they hold, so the journal only ever holds what the tables lack.
 */
export class FileJournal implements Journal {
  private buffered: string[] = [];
  private bufferedSeq = 0;
  private durableSeq: number;
  private waiters: { seq: number; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private writing: Promise<void> | undefined;
  private segments: { file: string; lastSeq: number }[] = [];
  private current!: { file: string; fd: fs.promises.FileHandle; bytes: number; lastSeq: number };
  private failed: unknown;
  private idle: NodeJS.Timeout | undefined;

  private constructor(
    private readonly dir: string,
    startSeq: number,
  ) {
    this.durableSeq = startSeq;
    this.bufferedSeq = startSeq;
  }

  /** A fresh journal after `startSeq` (earlier segments were replayed into the tables and are removed). */
  static async open(dir: string, startSeq: number): Promise<FileJournal> {
    fs.mkdirSync(dir, { recursive: true });
    for (const name of fs.readdirSync(dir)) if (name.startsWith('seg-')) fs.rmSync(path.join(dir, name));
    const j = new FileJournal(dir, startSeq);
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
    await this.current.fd.close();
  }

  private async pump(): Promise<void> {
    try {
      while (this.buffered.length > 0) {
        const chunk = this.buffered.join('');
        const upTo = this.bufferedSeq;
        this.buffered = [];
        await this.current.fd.write(chunk);
        if (!DSYNC) await this.current.fd.datasync();
        this.current.bytes += chunk.length;
        this.current.lastSeq = upTo;
        this.durableSeq = upTo;
        while (this.waiters.length > 0 && this.waiters[0].seq <= upTo) this.waiters.shift()?.resolve();
        if (this.current.bytes >= SEGMENT_BYTES) await this.roll(upTo + 1);
      }
    } catch (e) {
      // A full or failing disk: settles are no longer durable, and waiting for them must say so.
      this.failed = e;
      for (const w of this.waiters.splice(0)) w.reject(e);
    } finally {
      this.writing = undefined;
    }
  }

  private async roll(firstSeq: number): Promise<void> {
    if (this.current) {
      await this.current.fd.close();
      this.segments.push({ file: this.current.file, lastSeq: this.current.lastSeq });
    }
    const file = path.join(this.dir, segmentName(firstSeq));
    const fd = await fs.promises.open(file, SEGMENT_FLAGS);
    // The new file's name must survive a crash too, or its records would be unreachable.
    const dirFd = await fs.promises.open(this.dir, 'r');
    await dirFd.sync().finally(() => dirFd.close());
    this.current = { file, fd, bytes: 0, lastSeq: firstSeq - 1 };
  }
}
