import { JOB_STATUS_FILTERS } from '@gateway/events';
import { z } from 'zod';
import { fromRoute } from './result';
import { open } from './shapes';
import { defineTool } from './tool';

/** GET /v1/jobs: the account's jobs, newest first, keyset-paged. */
export const listJobs = defineTool({
  name: 'list_jobs',
  title: 'List jobs',
  description: "The account's jobs, newest first, with status, outcome and cost (null until settled). Page with next_cursor.",
  routes: ['/v1/jobs'],
  input: z.object({
    status: z
      .enum(JOB_STATUS_FILTERS)
      .optional()
      .describe('queued, running, succeeded, failed or canceled; or IN_QUEUE, IN_PROGRESS, COMPLETED as the rows show it'),
    model: z.string().optional(),
    category: z.enum(['text', 'image', 'video', 'audio', 'embedding', 'rerank']).optional(),
    cursor: z.string().optional().describe('next_cursor of the previous page'),
    limit: z.number().int().min(1).max(200).optional(),
  }),
  output: z.object({ jobs: z.array(open({ request_id: z.string(), status: z.string() })), next_cursor: z.string().nullable() }),
  async run(args, { caller, deps, signal }) {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(args)) if (v !== undefined) query.set(k, String(v));
    const qs = query.size ? `?${query}` : '';
    return fromRoute(await deps.edge.call(caller.key, `/v1/jobs${qs}`, { signal }), (body) => ({
      jobs: body.data,
      next_cursor: body.next_cursor ?? null,
    }));
  },
});
