import { z } from 'zod';
import { fromRoute, routeFailed, toolResult } from './result';
import { jobId, open } from './shapes';
import { defineTool } from './tool';

/** GET /v1/queue/requests/{id}/status, and the result route once the job has succeeded. */
export const getJob = defineTool({
  name: 'get_job',
  title: 'Get a job',
  description:
    "A job's status (IN_QUEUE, IN_PROGRESS, COMPLETED), its outcome once COMPLETED (succeeded, failed, canceled), and its result (payload, cost, usage) once it succeeded.",
  routes: ['/v1/queue/requests/job_x/status', '/v1/queue/requests/job_x'],
  input: z.object({ job_id: jobId, logs: z.boolean().optional().describe("Include the upstream's log lines") }),
  output: open({ request_id: z.string(), status: z.string(), outcome: z.string().nullable(), result: open({}).nullable() }),
  async run(args, { caller, deps, signal }) {
    const status = await deps.edge.call(caller.key, `/v1/queue/requests/${args.job_id}/status${args.logs ? '?logs=1' : ''}`, { signal });
    if (status.status !== 200) return routeFailed(status);
    const body = status.body as { status: string; outcome: string | null };
    if (body.status !== 'COMPLETED' || body.outcome !== 'succeeded') return toolResult({ ...body, result: null });
    const result = await deps.edge.call(caller.key, `/v1/queue/requests/${args.job_id}`, { signal });
    return fromRoute(result, (r) => ({ ...body, result: r }));
  },
});
