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

  /** Adds a usage event's tokens to its day, once per event id (the id is remembered in the same transaction). */
  async usageRecorded(eventId: string, finishedAt: Date, tokens: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const fresh = await tx.query('INSERT INTO seen_events (id) VALUES ($1) ON CONFLICT (id) DO NOTHING RETURNING id', [eventId]);
      if (fresh.length === 0) return false;
      if (tokens > 0) {
        await tx.query(
          `INSERT INTO stats_token_days (day, tokens) VALUES ($1::date, $2)
           ON CONFLICT (day) DO UPDATE SET tokens = stats_token_days.tokens + EXCLUDED.tokens`,
          [utcDay(finishedAt), tokens],
        );
      }
      return true;
    });
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
