import { GatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/service-kit';
import type { Session, SessionStore } from '../sessions';

export interface HubOptions {
  /** How often the one poller of this process asks the database about every stream open here. */
  pollMs: number;
  /** How often the sessions of open streams are marked in use, so the idle sweep leaves them. */
  touchMs: number;
  /** Open streams one account may hold on this process. */
  streamsPerAccount: number;
}

type Signal = 'events' | 'ended';

/** One open GET stream: it reads its session's queue when told there is something, and stops when told it ended. */
export class StreamHandle {
  /** The last message written to this stream (its SSE id). */
  cursor: number;
  private signal: Signal | undefined;
  private resolve: (() => void) | undefined;

  constructor(
    readonly session: Session,
    cursor: number,
    private readonly release: () => void,
  ) {
    this.cursor = cursor;
  }

  /** Wakes the stream; an end is never overwritten by a later "events". */
  notify(signal: Signal): void {
    if (this.signal !== 'ended') this.signal = signal;
    this.resolve?.();
  }

  /** Resolves with what happened since the last call, waiting when nothing has. */
  async next(): Promise<Signal> {
    if (!this.signal) await new Promise<void>((r) => (this.resolve = r));
    this.resolve = undefined;
    const s = this.signal as Signal;
    if (s === 'events') this.signal = undefined;
    return s;
  }

  close(): void {
    this.notify('ended');
    this.release();
  }
}

/**
 * Every GET stream of this process, and the one poller that serves them all. A message queued by this process
 * wakes its stream at once (wake); one queued by another replica, or a session ended there or expired, is found by
 * a single query per tick for all the streams together, so a thousand idle streams cost what one does.
 */
export class StreamHub {
  private readonly bySession = new Map<string, Set<StreamHandle>>();
  private readonly perAccount = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private lastTouch = Date.now();

  constructor(
    private readonly sessions: SessionStore,
    private readonly opts: HubOptions,
    private readonly logger: Logger,
  ) {}

  /** A stream of `session` from `cursor`, or a 429 when its account has its share of streams open here. */
  open(session: Session, cursor: number): StreamHandle {
    const n = this.perAccount.get(session.accountId) ?? 0;
    if (n >= this.opts.streamsPerAccount) {
      throw new GatewayError(
        'rate_limited',
        `This account has ${n} MCP streams open, the most it may hold: close one (one GET stream per session is enough)`,
        { headers: { 'retry-after': '5', 'x-gateway-limit-type': 'concurrency' } },
      );
    }
    this.perAccount.set(session.accountId, n + 1);
    let released = false;
    const handle: StreamHandle = new StreamHandle(session, cursor, () => {
      if (released) return;
      released = true;
      this.detach(handle);
    });
    const set = this.bySession.get(session.id) ?? new Set<StreamHandle>();
    this.bySession.set(session.id, set.add(handle));
    this.timer ??= setInterval(() => void this.poll(), this.opts.pollMs).unref();
    return handle;
  }

  /** Messages were queued for the session by this process. */
  wake(sessionId: string): void {
    for (const h of this.bySession.get(sessionId) ?? []) h.notify('events');
  }

  /** The session ended by a call to this process: its streams here close now. */
  end(sessionId: string): void {
    for (const h of this.bySession.get(sessionId) ?? []) h.notify('ended');
  }

  /** Streams open on this process (metrics, tests). */
  get size(): number {
    let n = 0;
    for (const set of this.bySession.values()) n += set.size;
    return n;
  }

  /** One tick of the shared poller; exposed so tests can drive it. */
  async poll(): Promise<void> {
    if (this.polling || this.bySession.size === 0) return;
    this.polling = true;
    try {
      const cursors = [...this.bySession].map(([id, set]) => ({ id, after: Math.min(...[...set].map((h) => h.cursor)) }));
      for (const s of await this.sessions.streamStates(cursors)) {
        if (s.ended) this.end(s.id);
        else if (s.pending) this.wake(s.id);
      }
      if (Date.now() - this.lastTouch >= this.opts.touchMs) {
        this.lastTouch = Date.now();
        await this.sessions.touch([...this.bySession.keys()]);
      }
    } catch (e) {
      // The database away for a tick: the streams keep waiting, and the next tick asks again.
      this.logger.warn({ err: e }, 'mcp stream poll failed');
    } finally {
      this.polling = false;
    }
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    for (const set of this.bySession.values()) for (const h of set) h.notify('ended');
  }

  private detach(handle: StreamHandle): void {
    const { id, accountId } = handle.session;
    const set = this.bySession.get(id);
    set?.delete(handle);
    if (set?.size === 0) this.bySession.delete(id);
    const n = (this.perAccount.get(accountId) ?? 1) - 1;
    if (n <= 0) this.perAccount.delete(accountId);
    else this.perAccount.set(accountId, n);
    if (this.bySession.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
