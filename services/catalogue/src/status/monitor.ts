import type { Logger } from '@gateway/service-kit';
import type { Check, Measurement } from './checks';
import type { ComponentKey } from './components';
import type { StatusStore } from './store';

export interface MonitorDeps {
  store: StatusStore;
  checks: Record<ComponentKey, Check>;
  intervalMs: number;
  now: () => Date;
  logger: Logger;
}

export interface Latest extends Measurement {
  at: string;
}

/**
 * Samples every component once per interval and records each measurement (a check with nothing to measure records
 * nothing). The newest measurements are also kept in memory, so the answer still reports them while the
 * catalogue's own database cannot be written.
 */
export class StatusMonitor {
  readonly latest = new Map<ComponentKey, Latest>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly deps: MonitorDeps) {}

  start(): void {
    if (this.timer) return;
    void this.sampleOnce();
    this.timer = setInterval(() => void this.sampleOnce(), this.deps.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One round; a round still running when the next is due is not doubled. */
  sampleOnce(): Promise<void> {
    this.running ??= this.round().finally(() => (this.running = undefined));
    return this.running;
  }

  private async round(): Promise<void> {
    const { store, checks, intervalMs, now, logger } = this.deps;
    const at = now();
    const slot = Math.floor(at.getTime() / intervalMs);
    const keys = Object.keys(checks) as ComponentKey[];
    const measured = await Promise.all(
      keys.map((k) => checks[k]().catch((err): undefined => void logger.warn({ err, component: k }, 'status check failed'))),
    );
    for (const [i, key] of keys.entries()) {
      const m = measured[i];
      if (!m) continue;
      this.latest.set(key, { ...m, at: at.toISOString() });
      try {
        await store.record({ component: key, at, outcome: m.outcome, latencyMs: m.latencyMs }, slot);
      } catch (err) {
        logger.warn({ err, component: key }, 'status sample not recorded');
      }
    }
    await store.prune(at).catch((err) => logger.warn({ err }, 'status prune failed'));
  }
}
