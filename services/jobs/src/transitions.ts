import crypto from 'node:crypto';
import type { EventBus } from '@gateway/bus';
import type { Db, Queryable } from '@gateway/db';
import type { JobStatus } from '@gateway/events';
import type { Logger, Metrics } from '@gateway/service-kit';
import { HoldCloser, holdRecordFromJSON, type CallFacts, type Usage } from '@gateway/spend';
import type { JobError, JobRow } from './store/job-row';
import { normalise } from './store/job-row';
import { enqueueJobState, outboxBus } from './store/outbox';

export interface TransitionDeps {
  db: Db;
  bus: EventBus;
  logger: Logger;
  metrics?: Metrics;
  /** Told after a commit that queued events or deliveries: the relay and the webhook dispatcher run at once. */
  onCommitted?: () => void;
}

export type Ending =
  | { outcome: 'succeeded'; payload: Record<string, unknown>; usage: Usage & { videoSeconds: string }; videoFileId: string | null; facts: CallFacts }
  /** `holdClosed`: the failed call's PaidCall released the hold itself; only the job's state is left to write. */
  | { outcome: 'failed'; error: JobError; facts: CallFacts; holdClosed?: boolean }
  | { outcome: 'canceled' };

/** The webhook body of a terminal job: exactly the contract's fields, in this order, serialised once. */
export function webhookBody(job: JobRow): string {
  return JSON.stringify({
    request_id: job.id,
    gateway_request_id: job.gateway_request_id,
    status: 'COMPLETED',
    outcome: job.status,
    payload: job.status === 'succeeded' ? job.payload : null,
    error: job.status === 'succeeded' ? null : publicError(job.error),
  });
}

/** The error object clients see (status body, webhook): code and message; the status is the result route's. */
export function publicError(error: JobError | null): { code: string; message: string } | null {
  return error ? { code: error.code, message: error.message } : null;
}

/**
 * Ends a job, once: the state change, the hold's close (settle or release, through the outbox), the job event and
 * the webhook delivery are one transaction. Whoever ends the job first (worker, cancel, a second worker after a
 * lease lapsed) wins; the others get undefined and change nothing, so a job is never closed or charged twice.
 */
export async function endJob(deps: TransitionDeps, jobId: string, ending: Ending): Promise<JobRow | undefined> {
  const ended = await deps.db.transaction(async (tx) => {
    const status: JobStatus = ending.outcome;
    const error: JobError | null =
      ending.outcome === 'failed'
        ? ending.error
        : ending.outcome === 'canceled'
          ? { code: 'canceled', message: 'The job was cancelled', status: 409 }
          : null;
    const done = ending.outcome === 'succeeded' ? ending : undefined;
    const [row] = await tx.query(
      `UPDATE jobs SET status = $2, completed_at = now(), error = $3::jsonb, payload = $4::jsonb, usage = $5::jsonb, charge_nano = LEAST($6::numeric, (hold->>'amount_nano')::numeric),
              video_file_id = $7, started_at = COALESCE(started_at, CASE WHEN $2 = 'succeeded' THEN now() END),
              lease_owner = NULL, lease_until = NULL
       WHERE id = $1 AND status IN ('queued', 'running') RETURNING *`,
      [
        jobId,
        status,
        error ? JSON.stringify(error) : null,
        done ? JSON.stringify(done.payload) : null,
        done ? JSON.stringify({ video_seconds: done.usage.videoSeconds }) : null,
        done ? done.usage.chargeNano.toString() : null,
        done?.videoFileId ?? null,
      ],
    );
    if (!row) return undefined;
    const job = normalise(row);
    const closer = new HoldCloser({ bus: outboxBus(tx, deps.bus), logger: deps.logger, metrics: deps.metrics }, holdRecordFromJSON(job.hold));
    if (ending.outcome === 'succeeded') {
      const charged = await closer.settle(ending.usage, ending.facts);
      deps.logger.info({ jobId, charged }, 'job succeeded');
    } else if (!(ending.outcome === 'failed' && ending.holdClosed)) {
      await closer.release(error?.code ?? 'failed', undefined, ending.outcome === 'failed' ? ending.facts : {});
      deps.logger.info({ jobId, outcome: ending.outcome, code: error?.code }, 'job ended');
    }
    await enqueueJobState(tx, job);
    if (job.webhook_url) await enqueueDelivery(tx, job);
    return job;
  });
  if (ended) {
    deps.metrics
      ?.counter('gateway_jobs_ended_total', 'Jobs ended, by model and outcome', ['model', 'outcome'])
      .inc({ model: ended.model, outcome: ended.status });
    deps.onCommitted?.();
  }
  return ended;
}

async function enqueueDelivery(tx: Queryable, job: JobRow): Promise<void> {
  await tx.query(`INSERT INTO webhook_deliveries (id, job_id, account_id, url, body) VALUES ($1, $2, $3, $4, $5)`, [
    `whd_${crypto.randomBytes(16).toString('hex')}`,
    job.id,
    job.account_id,
    job.webhook_url,
    webhookBody(job),
  ]);
}

/** IN_QUEUE → IN_PROGRESS: the upstream has started; queue_position becomes null from here on. */
export async function markRunning(deps: TransitionDeps, job: JobRow, owner: string): Promise<boolean> {
  const moved = await deps.db.transaction(async (tx) => {
    const [row] = await tx.query(
      `UPDATE jobs SET status = 'running', started_at = COALESCE(started_at, now()) WHERE id = $1 AND status = 'queued' AND lease_owner = $2 RETURNING *`,
      [job.id, owner],
    );
    if (!row) return false;
    await enqueueJobState(tx, normalise(row));
    return true;
  });
  if (moved) deps.onCommitted?.();
  return moved;
}
