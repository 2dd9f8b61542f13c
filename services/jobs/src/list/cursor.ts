import { z } from 'zod';

/** Where a page ends: its last row's (created_at, id), which the next page continues strictly after. */
export interface JobsCursor {
  createdAt: string;
  id: string;
}

// Both parts go into SQL as they are (a timestamptz and a text): only what encodeCursor writes is accepted, so a
// forged one is the client's error (400) and never the database's (a 503 that tells the client to retry).
const position = z.object({
  createdAt: z.iso.datetime(),
  id: z.string().regex(/^job_[0-9a-z]{1,64}$/),
});

/** Opaque to clients: base64url of `<ISO time>|<job id>`. */
export const encodeCursor = (createdAt: Date, id: string): string => Buffer.from(`${createdAt.toISOString()}|${id}`).toString('base64url');

/** The `cursor` query parameter, decoded and checked as the query is validated. */
export const cursorParam = z
  .string()
  .max(200)
  .transform((raw, ctx): JobsCursor => {
    const parts = Buffer.from(raw, 'base64url').toString().split('|');
    const r = position.safeParse({ createdAt: parts[0], id: parts[1] });
    if (parts.length === 2 && r.success) return r.data;
    ctx.addIssue({ code: 'custom', message: 'not a cursor this route gave' });
    return z.NEVER;
  });
