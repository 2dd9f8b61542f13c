import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import type { Db } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { contextOf, validate } from '@gateway/service-kit';
import type { MediaFilesPort } from '../media/port';
import { isFinished, type JobRow } from '../store/job-row';
import { findJob, queuePosition } from '../store/jobs';
import { endJob, type TransitionDeps } from '../transitions';
import { resultView, statusView, wireStatus } from './views';

export interface ReadDeps extends TransitionDeps {
  db: Db;
  media: MediaFilesPort;
  /** Asks the upstream to stop a job that was cancelled here; best effort, after the cancel committed. */
  cancelUpstream(job: JobRow): Promise<void>;
}

const JOB_ID = /^job_[a-z0-9]{24}$/;
// `/v1/queue/requests/{id}...` and `/v1/queue/{model}/requests/{id}...`: the model may hold slashes of its own.
const QUEUE_JOB = String.raw`^\/v1\/queue\/(?:(.+)\/)?requests\/([^/]+)`;
const statusPath = new RegExp(`${QUEUE_JOB}\\/status\\/?$`);
const resultPath = new RegExp(`${QUEUE_JOB}\\/?$`);
const cancelPath = new RegExp(`${QUEUE_JOB}\\/cancel\\/?$`);
const statusQuery = z.object({ logs: z.enum(['0', '1']).default('0') }).passthrough();

/** The caller's job by id, and by model when the path names one; anything else is the contract's 404 model_unavailable. */
async function jobOf(deps: ReadDeps, req: Request, id: string, model?: string): Promise<JobRow> {
  const ctx = contextOf(req);
  const job = JOB_ID.test(id) ? await findJob(deps.db, id, ctx.accountId) : undefined;
  if (!job || (model !== undefined && decodeURIComponent(model) !== job.model)) throw GatewayError.notFound(`Job ${id}`);
  return job;
}

/** The result of a job: 202 with where it stands while unfinished, 200 with the result, the failure's own error otherwise. */
async function answerResult(deps: ReadDeps, res: Response, job: JobRow): Promise<void> {
  if (!isFinished(job.status)) {
    res.status(202).json({ request_id: job.id, status: wireStatus(job), queue_position: await queuePosition(deps.db, job) });
    return;
  }
  if (job.status === 'succeeded') return void res.json(resultView(job));
  const error = job.error ?? { code: 'upstream_unavailable', message: 'The job failed', status: 503 };
  throw new GatewayError(error.code as never, error.message, { status: error.status });
}

export function mountReads(r: Router, deps: ReadDeps): void {
  r.get(statusPath, async (req, res) => {
    const [model, id] = [req.params[0], req.params[1]];
    const job = await jobOf(deps, req, String(id), model);
    const { logs } = validate(statusQuery, req.query);
    res.json(statusView(job, await queuePosition(deps.db, job), logs === '1'));
  });

  r.get(resultPath, async (req, res) => {
    const job = await jobOf(deps, req, String(req.params[1]), req.params[0]);
    await answerResult(deps, res, job);
  });

  r.get(/^\/v1\/videos\/([^/]+)\/?$/, async (req, res) => {
    await answerResult(deps, res, await jobOf(deps, req, String(req.params[0])));
  });

  /**
   * Cancelling an unfinished job ends it as canceled and releases its hold; cancelling a finished one changes
   * nothing. Both answer 200 with the status body, whose `outcome` says what the job's end was.
   */
  r.put(cancelPath, async (req, res) => {
    const job = await jobOf(deps, req, String(req.params[1]), req.params[0]);
    let now = job;
    if (!isFinished(job.status)) {
      const ended = await endJob(deps, job.id, { outcome: 'canceled' });
      if (ended) {
        now = ended;
        if (ended.ticket) void deps.cancelUpstream(ended).catch((err) => deps.logger.warn({ err, jobId: job.id }, 'upstream cancel failed'));
      } else {
        // The worker ended it first: the answer says how.
        now = (await findJob(deps.db, job.id, job.account_id)) ?? job;
      }
    }
    res.json(statusView(now, await queuePosition(deps.db, now), false));
  });

  /** The finished video's bytes, streamed through the media service's file store (Range, 410 once expired). */
  r.get(/^\/v1\/videos\/([^/]+)\/content\/?$/, async (req, res) => {
    const id = String(req.params[0]);
    const ctx = contextOf(req);
    const job = JOB_ID.test(id) ? await findJob(deps.db, id, ctx.accountId) : undefined;
    if (!job) throw new GatewayError('not_found', `No job ${id}`);
    if (!isFinished(job.status)) throw new GatewayError('invalid_request', `Job ${id} has not finished; its content is not ready`);
    if (job.status === 'canceled') throw new GatewayError('canceled', `Job ${id} was cancelled; it has no content`);
    if (job.status === 'failed') throw new GatewayError('invalid_request', `Job ${id} failed; it has no content`);
    if (!job.video_file_id) throw new GatewayError('not_found', `Job ${id} produced no video`);
    await deps.media.serve(req, res, job.video_file_id);
  });
}
