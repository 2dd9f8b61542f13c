import { z } from 'zod';

/**
 * Keyset pages over billing's tables, newest first, as GET /v1/jobs pages its jobs: `limit` (1 to 200, default 50),
 * an opaque `cursor`, and the answer's `has_more` and `next_cursor`. A page ends at its last row's (created_at, id)
 * and the next one continues strictly after it, so rows written while a client pages never shift a page.
 */

/** Where a page ends: a row's creation time to the microsecond, and its id, which breaks ties. */
export interface PagePosition {
  createdAt: string;
  id: string;
}

/**
 * The creation time as the cursor carries it: the database's own microseconds, in UTC. A JavaScript Date keeps
 * milliseconds only, and a cursor rounded to them would repeat or skip the rows of the same millisecond.
 */
export const positionSql = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** PostgreSQL text holds no NUL: a query value carrying one must be the client's 400, not the database's 503. */
function withoutNul(s: string): boolean {
  return !s.includes('\u0000');
}

/** A free-text query parameter of a listing (a search, a model filter), up to `max` characters and with no NUL. */
export const queryText = (max: number) => z.string().max(max).refine(withoutNul, 'must not hold a NUL character (%00)');

// Both parts go into SQL as they are (a timestamptz and a text): only what encodeCursor writes is accepted, so a
// forged one is the client's error (400), never the database's (a 503 that would tell the client to retry).
const position = z.object({
  createdAt: z.iso.datetime({ precision: 6 }),
  id: z.string().min(1).max(1000).refine(withoutNul),
});

/** Opaque to clients: base64url of `<time>|<id>`. */
export const encodeCursor = (p: PagePosition): string => Buffer.from(`${p.createdAt}|${p.id}`).toString('base64url');

/** The `cursor` query parameter, decoded and checked as the query is validated. */
export const cursorParam = z
  .string()
  .max(1500)
  .transform((raw, ctx): PagePosition => {
    // The time holds no `|`; the id is whatever follows the first one (ids are bound parameters, never SQL text).
    const text = Buffer.from(raw, 'base64url').toString();
    const cut = text.indexOf('|');
    const r = position.safeParse({ createdAt: text.slice(0, cut), id: text.slice(cut + 1) });
    if (cut > 0 && r.success) return r.data;
    ctx.addIssue({ code: 'custom', message: 'not a cursor this route gave' });
    return z.NEVER;
  });

/** The `limit` query parameter: as GET /v1/jobs takes it. */
export const limitParam = z.coerce.number().int().min(1).max(200).default(50);

/**
 * A page of `limit` from rows fetched with `limit + 1` (one more than asked tells whether another page follows,
 * without a count), each row carrying its position.
 */
export function pageOf<R extends { position: PagePosition }, V>(rows: R[], limit: number, view: (row: R) => V) {
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const last = page.at(-1);
  return { data: page.map(view), has_more: hasMore, next_cursor: hasMore && last ? encodeCursor(last.position) : null };
}
