import type { Db } from '@gateway/db';
import type { EndpointHealth } from '@gateway/events';
import { trailingDays, utcDay } from '../days';
import type { DayCounts, Outcome } from './vocabulary';

/** Days of history GET /v1/status answers and the roll-up keeps. */
export const WINDOW_DAYS = 90;

export interface Sample {
  component: string;
  at: Date;
  outcome: Outcome;
  latencyMs: number;
}

export interface StoredSample {
  component: string;
  at: string;
  outcome: Outcome;
  latencyMs: number;
}

export type EndpointReport = EndpointHealth['endpoints'][number] & { source: string; windowEnd: string };

/** The monitor's tables: samples, their daily roll-up, and the newest endpoint health reports. */
export class StatusStore {
  constructor(private readonly db: Db) {}

  /**
   * Records a sample in its slot and adds it to its UTC day, in one transaction. A slot already taken (another
   * replica sampled it) records nothing, so replicas never count a period twice.
   */
  async record(s: Sample, slot: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const fresh = await tx.query(
        `INSERT INTO status_samples (component, slot, at, outcome, latency_ms) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (component, slot) DO NOTHING RETURNING slot`,
        [s.component, slot, s.at.toISOString(), s.outcome, Math.round(s.latencyMs)],
      );
      if (fresh.length === 0) return false;
      await tx.query(
        `INSERT INTO status_days (component, day, samples, ok, degraded, down) VALUES ($1, $2::date, 1, $3, $4, $5)
         ON CONFLICT (component, day) DO UPDATE SET samples = status_days.samples + 1, ok = status_days.ok + EXCLUDED.ok,
           degraded = status_days.degraded + EXCLUDED.degraded, down = status_days.down + EXCLUDED.down`,
        [s.component, utcDay(s.at), s.outcome === 'ok' ? 1 : 0, s.outcome === 'degraded' ? 1 : 0, s.outcome === 'down' ? 1 : 0],
      );
      return true;
    });
  }

  /** The newest sample of each component (any replica's). */
  async latest(): Promise<Map<string, StoredSample>> {
    const rows = await this.db.query<{ component: string; at: Date | string; outcome: Outcome; latency_ms: number }>(
      `SELECT DISTINCT ON (component) component, at, outcome, latency_ms FROM status_samples ORDER BY component, at DESC`,
    );
    return new Map(
      rows.map((r) => [
        r.component,
        { component: r.component, at: new Date(r.at).toISOString(), outcome: r.outcome, latencyMs: Number(r.latency_ms) },
      ]),
    );
  }

  /** Each component's day counts over the window ending today (UTC), keyed component → day. */
  async days(now: Date): Promise<Map<string, Map<string, DayCounts>>> {
    const [first] = trailingDays(now, WINDOW_DAYS);
    const rows = await this.db.query<{ component: string; day: string; samples: number; ok: number; degraded: number; down: number }>(
      `SELECT component, to_char(day, 'YYYY-MM-DD') AS day, samples, ok, degraded, down FROM status_days
       WHERE day >= $1::date AND day <= $2::date`,
      [first, utcDay(now)],
    );
    const out = new Map<string, Map<string, DayCounts>>();
    for (const r of rows) {
      const byDay = out.get(r.component) ?? new Map<string, DayCounts>();
      byDay.set(r.day, { samples: Number(r.samples), ok: Number(r.ok), degraded: Number(r.degraded), down: Number(r.down) });
      out.set(r.component, byDay);
    }
    return out;
  }

  /** Keeps the newest report per process and endpoint; an older one arriving late changes nothing. */
  async saveReport(report: EndpointHealth): Promise<void> {
    for (const e of report.endpoints) {
      await this.db.query(
        `INSERT INTO endpoint_reports (source, endpoint, provider, window_end, attempts, failures, latency_ms, circuit)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (source, endpoint) DO UPDATE SET provider = EXCLUDED.provider, window_end = EXCLUDED.window_end,
           attempts = EXCLUDED.attempts, failures = EXCLUDED.failures, latency_ms = EXCLUDED.latency_ms, circuit = EXCLUDED.circuit
         WHERE endpoint_reports.window_end < EXCLUDED.window_end`,
        [report.source, e.endpoint, e.provider, report.window_end, e.attempts, e.failures, e.latency_ms, e.circuit],
      );
    }
  }

  /** Reports whose window ended after `since`: what the providers check may still call current. */
  async reportsSince(since: Date): Promise<EndpointReport[]> {
    const rows = await this.db.query<{
      source: string;
      endpoint: string;
      provider: string;
      window_end: Date | string;
      attempts: number;
      failures: number;
      latency_ms: number | null;
      circuit: EndpointReport['circuit'];
    }>('SELECT * FROM endpoint_reports WHERE window_end > $1', [since.toISOString()]);
    return rows.map((r) => ({
      source: r.source,
      endpoint: r.endpoint,
      provider: r.provider,
      windowEnd: new Date(r.window_end).toISOString(),
      attempts: Number(r.attempts),
      failures: Number(r.failures),
      latency_ms: r.latency_ms === null ? null : Number(r.latency_ms),
      circuit: r.circuit,
    }));
  }

  /** Raw samples are kept two days (only the newest is read); roll-ups for the window; reports for a day. */
  async prune(now: Date): Promise<void> {
    const [first] = trailingDays(now, WINDOW_DAYS);
    await this.db.query('DELETE FROM status_samples WHERE at < $1', [new Date(now.getTime() - 2 * 86_400_000).toISOString()]);
    await this.db.query('DELETE FROM status_days WHERE day < $1::date', [first]);
    await this.db.query('DELETE FROM endpoint_reports WHERE window_end < $1', [new Date(now.getTime() - 86_400_000).toISOString()]);
  }
}
