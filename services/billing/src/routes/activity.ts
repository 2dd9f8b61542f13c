import type { Router } from 'express';
import { z } from 'zod';
import type { Db } from '@gateway/db';
import { contextOf, validate } from '@gateway/service-kit';
import { activity, type DayWindow } from '../ledger/activity';

const DAY_MS = 86_400_000;

export const activityQuery = z
  .object({
    days: z.coerce.number().int().min(1).max(90).optional(),
    // OpenRouter's form: one UTC day. A calendar date only (2026-02-30 is refused), in years both engines and
    // Date read alike (PostgreSQL has no year 0; the day after 9999-12-31 has five digits).
    date: z.iso
      .date()
      .refine((d) => d >= '1970-01-01' && d < '9999-12-31', 'a date from 1970-01-01 to 9999-12-30')
      .optional(),
  })
  .passthrough()
  .refine((q) => q.days === undefined || q.date === undefined, { message: 'give either days or date, not both', path: ['date'] });

/** The whole UTC days the query asks for: `date`, or the last `days` (30 by default) up to and including today. */
export function windowOf(q: z.infer<typeof activityQuery>, now: Date): DayWindow {
  if (q.date !== undefined) {
    const from = new Date(`${q.date}T00:00:00.000Z`);
    return { from, until: new Date(from.getTime() + DAY_MS) };
  }
  const tomorrow = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) + DAY_MS;
  return { from: new Date(tomorrow - (q.days ?? 30) * DAY_MS), until: new Date(tomorrow) };
}

/** GET /v1/activity: the calling account's requests, spend and tokens per UTC day and model. */
export function mountActivity(r: Router, db: Db): void {
  r.get('/v1/activity', async (req, res) => {
    const q = validate(activityQuery, req.query);
    res.json({ data: await activity(db, contextOf(req).accountId, windowOf(q, new Date())) });
  });
}
