import type { Db } from '@gateway/db';
import { formatUsd, toCents2 } from '@gateway/money';

/** A window of whole UTC days: from the first day's midnight up to the midnight after the last. */
export interface DayWindow {
  from: Date;
  until: Date;
}

interface ActivityRow {
  date: string;
  model: string;
  requests: number;
  usage: string;
  tokens_prompt: string;
  tokens_completion: string;
  tokens_reasoning: string;
  tokens_cached: string;
}

/**
 * The account's usage records summed per UTC day and model, in one aggregate over the index on (account_id,
 * created_at). Every record counts, failed ones included (they are requests, and their charge, usually 0, is what
 * the account paid), so a day's figures are exactly the sum of that day's generation records. The sums are read
 * as text: a bigint sum is a numeric the drivers would hand over as a float or a string depending on the engine.
 */
export async function activity(db: Db, accountId: string, w: DayWindow) {
  const rows = await db.query<ActivityRow & Record<string, unknown>>(
    `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS date, model, count(*)::integer AS requests,
            sum(total_cost)::text AS usage, sum(tokens_prompt)::text AS tokens_prompt,
            sum(tokens_completion)::text AS tokens_completion, sum(tokens_reasoning)::text AS tokens_reasoning,
            sum(tokens_cached)::text AS tokens_cached
       FROM usage_records
      WHERE account_id = $1 AND created_at >= $2::timestamptz AND created_at < $3::timestamptz
      GROUP BY 1, 2`,
    [accountId, w.from.toISOString(), w.until.toISOString()],
  );
  // Sorted here, by code unit: the databases' collations would order model ids differently on each engine.
  const byDateThenModel = (a: ActivityRow, b: ActivityRow) => (a.date === b.date ? compare(a.model, b.model) : compare(a.date, b.date));
  return rows.sort(byDateThenModel).map((r) => {
    const usage = BigInt(r.usage);
    return {
      date: r.date,
      model: r.model,
      requests: Number(r.requests),
      // Two decimals, as every account route shows money; the exact figure beside it, as `cost` is to `total_cost`.
      usage: toCents2(usage),
      usage_exact: formatUsd(usage),
      tokens_prompt: Number(r.tokens_prompt),
      tokens_completion: Number(r.tokens_completion),
      tokens_reasoning: Number(r.tokens_reasoning),
      tokens_cached: Number(r.tokens_cached),
    };
  });
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
