import type { Db } from '@gateway/db';
import { trailingDays, utcDay } from '../days';

/** Days of tokens GET /v1/stats sums: today (UTC) and the 29 before it. */
export const TOKEN_WINDOW_DAYS = 30;

/** The stats facts the catalogue keeps from billing's events. */
export class StatsStore {
  constructor(private readonly db: Db) {}

  /** Idempotent by nature: an account is counted once however often it is announced. */
  async accountOpened(accountId: string, openedAt: string): Promise<void> {
    await this.db.query('INSERT INTO stats_accounts (account_id, opened_at) VALUES ($1, $2) ON CONFLICT (account_id) DO NOTHING', [
      accountId,
      openedAt,
    ]);
  }

  /** Adds a usage event's tokens to its day, once per event id; true when the id was new. */
  async usageRecorded(eventId: string, finishedAt: Date, tokens: number): Promise<boolean> {
    return (await this.usageRecordedMany([{ eventId, finishedAt, tokens }])) === 1;
  }

  /**
   * Adds many usage events at once, each once per event id, in one statement (so one round trip): the day's sums
   * move only by the events whose ids were new, and both writes commit or neither does. Returns how many were new.
   */
  async usageRecordedMany(events: Array<{ eventId: string; finishedAt: Date; tokens: number }>): Promise<number> {
    const unique = [...new Map(events.map((e) => [e.eventId, { id: e.eventId, day: utcDay(e.finishedAt), tokens: e.tokens }])).values()];
    if (unique.length === 0) return 0;
    const [row] = await this.db.query<{ fresh: number | string }>(
      `WITH input AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(id text, day date, tokens bigint)),
            fresh AS (INSERT INTO seen_events (id) SELECT id FROM input ON CONFLICT (id) DO NOTHING RETURNING id),
            sums AS (SELECT i.day, sum(i.tokens)::bigint AS tokens FROM input i JOIN fresh f ON f.id = i.id GROUP BY i.day),
            added AS (INSERT INTO stats_token_days (day, tokens) SELECT day, tokens FROM sums WHERE tokens > 0
                      ON CONFLICT (day) DO UPDATE SET tokens = stats_token_days.tokens + EXCLUDED.tokens)
       SELECT count(*)::int AS fresh FROM fresh`,
      [JSON.stringify(unique)],
    );
    return Number(row.fresh);
  }

  async accounts(): Promise<number> {
    const [row] = await this.db.query<{ n: string | number }>('SELECT count(*)::int AS n FROM stats_accounts');
    return Number(row.n);
  }

  /** Tokens of the trailing window ending today (UTC); a bigint sum, returned as a number (far below 2^53 in practice). */
  async tokens(now: Date): Promise<number> {
    const [first] = trailingDays(now, TOKEN_WINDOW_DAYS);
    const [row] = await this.db.query<{ t: string }>(
      'SELECT coalesce(sum(tokens), 0)::text AS t FROM stats_token_days WHERE day >= $1::date AND day <= $2::date',
      [first, utcDay(now)],
    );
    return Number(row.t);
  }

  /** Drops what no answer reads any more: token days before the window, remembered event ids older than a week. */
  async prune(now: Date): Promise<void> {
    const [first] = trailingDays(now, TOKEN_WINDOW_DAYS);
    await this.db.query('DELETE FROM stats_token_days WHERE day < $1::date', [first]);
    await this.db.query('DELETE FROM seen_events WHERE seen_at < $1', [new Date(now.getTime() - 7 * 86_400_000).toISOString()]);
  }
}
