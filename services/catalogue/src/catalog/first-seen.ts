import type { Queryable } from '@gateway/db';

/** Rows per INSERT: far below PostgreSQL's 65,535 parameters, whatever the catalogue's size. */
const BATCH = 500;

/**
 * Records `now` as the first appearance of every id not seen before, and answers when each of `ids` first
 * appeared. `ON CONFLICT DO NOTHING`: replicas starting together race harmlessly, the first row stands, and a
 * restart never moves a date. An id that leaves the config keeps its row, so one that comes back keeps its date.
 */
export async function recordFirstSeen(db: Queryable, ids: string[], now: Date): Promise<Map<string, string>> {
  for (let i = 0; i < ids.length; i += BATCH) {
    const batch = ids.slice(i, i + BATCH);
    const values = batch.map((_, j) => `($${j + 2}, $1::timestamptz)`).join(', ');
    await db.query(`INSERT INTO model_first_seen (model_id, first_seen_at) VALUES ${values} ON CONFLICT (model_id) DO NOTHING`, [
      now.toISOString(),
      ...batch,
    ]);
  }
  const rows = await db.query<{ model_id: string; first_seen_at: Date | string }>('SELECT model_id, first_seen_at FROM model_first_seen');
  const wanted = new Set(ids);
  return new Map(rows.filter((r) => wanted.has(r.model_id)).map((r) => [r.model_id, new Date(r.first_seen_at).toISOString()]));
}
