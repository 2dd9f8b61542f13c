import { z } from 'zod';
import { fromRoute } from './result';
import { modelSlug, open } from './shapes';
import { defineTool } from './tool';

/**
 * POST /v1/queue/{model}: the job's worst case is held at submit, as for any client. The job is linked to this
 * session, so its end arrives on the session's GET stream as `notifications/message`.
 */
export const submitJob = defineTool({
  name: 'submit_job',
  title: 'Submit a queued job',
  description:
    "Submits long work (video, or any queue model) and returns at once with the job id. The session's event stream (GET /v1/mcp) receives a notifications/message when the job finishes; get_job polls it.",
  routes: ['/v1/queue/author/slug'],
  input: z.object({
    model: modelSlug,
    input: z.record(z.string(), z.unknown()).describe("The model's own input (e.g. prompt, duration in seconds, n, size), passed through"),
    webhook_url: z
      .url({ protocol: /^https$/ })
      .optional()
      .describe('An https URL called once when the job ends'),
    idempotency_key: z.string().min(1).max(255).optional().describe('Repeating it returns the same job instead of a second one'),
  }),
  output: open({ request_id: z.string(), status: z.string(), queue_position: z.number().int().nullable() }),
  async run(args, { caller, deps, signal }) {
    const answer = await deps.edge.call(caller.key, `/v1/queue/${args.model}`, {
      method: 'POST',
      body: { ...args.input, ...(args.webhook_url ? { webhook_url: args.webhook_url } : {}) },
      headers: args.idempotency_key ? { 'idempotency-key': args.idempotency_key } : {},
      signal,
    });
    if (answer.status >= 200 && answer.status < 300) {
      const jobId = (answer.body as { request_id: string }).request_id;
      await deps.sessions.linkJob(caller.sessionId, caller.accountId, jobId);
      // A job that ended before the link existed sent its event unseen: ask once, and queue its end ourselves.
      const status = await deps.edge.call(caller.key, `/v1/queue/requests/${jobId}/status`, { signal });
      const s = status.body as { status?: string; outcome?: string | null } | undefined;
      if (status.status === 200 && s?.status === 'COMPLETED' && s.outcome) {
        await deps.notifier.jobEnded(caller.sessionId, { job_id: jobId, model: args.model, outcome: s.outcome, error_code: null });
      }
    }
    return fromRoute(answer, (body) => body);
  },
});
