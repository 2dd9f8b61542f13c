import type { Router } from 'express';
import { z } from 'zod';
import type { Db } from '@gateway/db';
import { JOB_STATUS_FILTERS, storedStatusesOf } from '@gateway/events';
import { contextOf, validate } from '@gateway/service-kit';
import { listRowView } from '../read/views';
import { listJobs, queuePosition } from '../store/jobs';
import { cursorParam, encodeCursor } from './cursor';

const listQuery = z
  .object({
    status: z.enum(JOB_STATUS_FILTERS).optional(),
    model: z.string().min(1).max(200).optional(),
    category: z.enum(['text', 'image', 'video', 'audio', 'embedding', 'rerank']).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: cursorParam.optional(),
  })
  .passthrough();

/** GET /v1/jobs: the account's jobs, newest first, filtered by status, model and category; keyset pages. */
export function mountList(r: Router, deps: { db: Db }): void {
  r.get('/v1/jobs', async (req, res) => {
    const q = validate(listQuery, req.query);
    const ctx = contextOf(req);
    // One more than asked tells whether another page follows, without a count.
    const rows = await listJobs(deps.db, {
      accountId: ctx.accountId,
      statuses: q.status && storedStatusesOf(q.status),
      model: q.model,
      category: q.category,
      before: q.cursor,
      limit: q.limit + 1,
    });
    const page = rows.slice(0, q.limit);
    const hasMore = rows.length > q.limit;
    const last = page.at(-1);
    res.json({
      data: await Promise.all(page.map(async (job) => listRowView(job, await queuePosition(deps.db, job)))),
      has_more: hasMore,
      next_cursor: hasMore && last ? encodeCursor(last.created_at, last.id) : null,
    });
  });
}
