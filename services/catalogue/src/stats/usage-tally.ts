import type { Logger } from '@gateway/service-kit';
import type { StatsStore } from './store';

interface Pending {
  eventId: string;
  finishedAt: Date;
  tokens: number;
}

/**
 * Usage events counted in memory and written together, a second after the first of them (or every `maxPending`): every call the
 * gateway bills sends one, and a database write per event cost the embedded gateway half its throughput on two
 * cores. The price is a window: events handed over but not yet written (at most a second's) are lost if the
 * process dies, so the 30-day token figure can fall short by that much. Stats only; money never passes here.
 * A failed write keeps its events for the next one; past `cap` the oldest are dropped, with an error logged.
 * The write is a timer set when an event arrives, not a poll: an idle gateway is never woken for an empty tally.
 */
export class UsageTally {
  private pending: Pending[] = [];
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private writing: Promise<void> | undefined;

  constructor(
    private readonly store: StatsStore,
    private readonly logger: Logger,
    private readonly opts: { intervalMs?: number; maxPending?: number; cap?: number } = {},
  ) {}

  add(eventId: string, finishedAt: Date, tokens: number): void {
    this.pending.push({ eventId, finishedAt, tokens });
    if (this.pending.length >= (this.opts.maxPending ?? 500)) void this.flush();
    else this.arm();
  }

  /** Writes what is pending; concurrent calls wait for the same write, then write what came meanwhile. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.writing = this.store
      .usageRecordedMany(batch)
      .then(
        () => undefined,
        (err) => {
          const cap = this.opts.cap ?? 100_000;
          const kept = [...batch, ...this.pending];
          const dropped = Math.max(0, kept.length - cap);
          this.pending = kept.slice(dropped);
          this.logger.error({ err, waiting: this.pending.length, dropped }, 'could not write usage to the stats; retrying');
        },
      )
      .finally(() => {
        this.writing = undefined;
        // Kept after a failure, or arrived while writing: their second starts now.
        if (this.pending.length) this.arm();
      });
    await this.writing;
  }

  start(): void {
    this.started = true;
    if (this.pending.length) this.arm();
  }

  async stop(): Promise<void> {
    this.started = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private arm(): void {
    if (!this.started || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.opts.intervalMs ?? 1_000);
    this.timer.unref();
  }
}
