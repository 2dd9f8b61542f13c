import path from 'node:path';
import { Worker } from 'node:worker_threads';

/** What pglite-worker.js posts back: a statement's answer, or whether a database it was asked to open is open. */
type WorkerReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { message: string; code?: string; constraint?: string } }
  | { opened: number; error?: string };

type Waiter = { resolve: (v: unknown) => void; reject: (e: unknown) => void };

/**
 * A worker thread that runs PGlites (pglite-worker.js): the WebAssembly databases get the second core and the HTTP
 * event loop stays free. The process keeps one for all of its databases (`sharedPgliteThread`): each thread is a V8
 * isolate holding PGlite's code and a copy of its runtime, about 55 MiB for the embedded gateway's second database
 * (docs/benchmarks.md). The thread ends when the last database on it closes.
 */
export class PgliteThread {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Waiter>();
  private readonly opening = new Map<number, Waiter>();
  private nextId = 1;
  private nextDb = 1;
  private databases = 0;
  private failed: Error | undefined;

  constructor(
    private readonly wasmModule: WebAssembly.Module | undefined,
    private readonly onEnd: (thread: PgliteThread) => void = () => undefined,
  ) {}

  /**
   * Opens the database on `dir` (in memory when undefined), first copying the cluster `copyFrom` there. Synchronous
   * up to the message (or the thread's spawn, for its first database): a database prestarted while the gateway's
   * modules load starts then, not after them.
   */
  open(dir: string | undefined, copyFrom?: string): { db: number; ready: Promise<void> } {
    const db = this.nextDb++;
    this.databases++;
    const ready = new Promise<void>((resolve, reject) => this.opening.set(db, { resolve: resolve as (v: unknown) => void, reject }));
    const request = { db, dir, copyFrom };
    if (this.failed) this.settleOpen({ opened: db, error: this.failed.message });
    else if (this.worker) this.worker.postMessage({ op: 'open', ...request });
    else this.worker = this.spawn(request);
    return { db, ready };
  }

  /** A statement (or begin, commit, rollback) for database `db`; `msg` is the caller's own fresh object. */
  send<T>(db: number, msg: Record<string, unknown>): Promise<T> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      // The worker's answer is untyped: T is what the caller's SQL selects.
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      msg.id = id;
      msg.db = db;
      (this.worker as Worker).postMessage(msg);
    });
  }

  /** Shuts database `db` down (with `syncTree`, every file of its directory synced after); the last one ends the thread. */
  async close(db: number, opts: { syncTree?: boolean } = {}): Promise<void> {
    try {
      await this.send(db, { op: 'close', ...opts });
    } finally {
      await this.release();
    }
  }

  private spawn(first: { db: number; dir: string | undefined; copyFrom?: string }): Worker {
    const worker = new Worker(path.join(__dirname, 'pglite-worker.js'), {
      workerData: { wasmModule: this.wasmModule, first },
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    worker.on('message', (m: WorkerReply) => {
      if ('opened' in m) {
        this.settleOpen(m);
        return;
      }
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.ok) p.resolve(m.result);
      else p.reject(Object.assign(new Error(m.error.message), { code: m.error.code, constraint: m.error.constraint }));
    });
    const fail = (e: Error) => {
      this.failed ??= e;
      for (const p of [...this.pending.values(), ...this.opening.values()]) p.reject(e);
      this.pending.clear();
      this.opening.clear();
      this.onEnd(this);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the PGlite thread ended (exit code ${code})`)));
    return worker;
  }

  private settleOpen(m: { opened: number; error?: string }): void {
    const waiter = this.opening.get(m.opened);
    if (!waiter) return;
    this.opening.delete(m.opened);
    if (!m.error) {
      waiter.resolve(undefined);
      return;
    }
    waiter.reject(new Error(`PGlite failed to start: ${m.error}`));
    void this.release();
  }

  private async release(): Promise<void> {
    if (--this.databases > 0) return;
    // Detached first, so a database opened from now on gets a new thread rather than this ending one.
    this.onEnd(this);
    this.failed ??= new Error('this PGlite thread has ended');
    await this.worker?.terminate();
  }
}

/**
 * The thread's young generation. V8 lets it grow to two 16 MiB semi-spaces, resident once touched, for a thread
 * whose JavaScript only passes statements and rows between PGlite and the main thread: 8 MiB in all kept about
 * 20-35 MiB of RSS off a standalone pair of PGlites after 4,000 statements each (docs/benchmarks.md).
 */
const YOUNG_GENERATION_MB = 8;

let shared: PgliteThread | undefined;
/** The thread every PGlite of this process opens on (a new one once the last database on it has closed). */
export function sharedPgliteThread(wasmModule: () => WebAssembly.Module | undefined): PgliteThread {
  shared ??= new PgliteThread(wasmModule(), (ended) => {
    if (shared === ended) shared = undefined;
  });
  return shared;
}
