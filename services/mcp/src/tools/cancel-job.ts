import { z } from 'zod';
import { fromRoute } from './result';
import { jobId, open } from './shapes';
import { defineTool } from './tool';

/** PUT /v1/queue/requests/{id}/cancel: ends an unfinished job and releases its hold; repeating it is harmless. */
export const cancelJob = defineTool({
  name: 'cancel_job',
  title: 'Cancel a job',
  description: 'Cancels an unfinished job; its hold is released and nothing is charged. Idempotent.',
  routes: ['/v1/queue/requests/job_x/cancel'],
  input: z.object({ job_id: jobId }),
  output: open({}),
  async run(args, { caller, deps, signal }) {
    const answer = await deps.edge.call(caller.key, `/v1/queue/requests/${args.job_id}/cancel`, { method: 'PUT', signal });
    return fromRoute(answer, (body) => (body && typeof body === 'object' ? body : { request_id: args.job_id }));
  },
});
