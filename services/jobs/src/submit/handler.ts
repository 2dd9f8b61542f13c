import type { Request, Response, Router } from 'express';
import type { JobSettingsPort } from '@gateway/billing-client';
import type { Db, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { heldSeconds, videoWorstCase } from '@gateway/pricing';
import { contextOf, newRequestId, validate } from '@gateway/service-kit';
import { PaidCall, holdRecordToJSON, refuseOtherCategory, requestFingerprint, type SpendDeps } from '@gateway/spend';
import { submitView } from '../read/views';
import type { JobRow } from '../store/job-row';
import { countInFlight, findByIdempotencyKey, insertJob, lockAccount, queuePosition, typicalJobSeconds } from '../store/jobs';
import { enqueueJobState } from '../store/outbox';
import { type SubmitBody, submitBody, submitQuery, upstreamInput } from './schema';

export interface SubmitDeps extends SpendDeps {
  db: Db;
  accounts: JobSettingsPort;
  publicUrl: string;
  /** limits.job_concurrency: the ceiling of accounts without their own. */
  defaultConcurrency: number;
  /** Told after a job was created: the worker takes it at once instead of at its next tick. */
  onSubmitted(): void;
}

/**
 * POST /v1/queue/{model} (the whole slug, slashes included) and POST /v1/videos[/generations] (model in the body):
 * one flow. Under a per-account lock: an Idempotency-Key already used returns its job; the account's ceiling of
 * jobs in flight answers 429 concurrency; then the hold and the job row commit together. A failure after the hold
 * was placed releases it, so a refused submit leaves nothing behind.
 */
export function mountSubmit(r: Router, deps: SubmitDeps): void {
  r.post(/^\/v1\/queue\/(?!requests\/)(.+[^/])\/?$/, async (req, res) => {
    const slug = decodeURIComponent((req.params as Record<string, string>)[0]);
    await submit(deps, req, res, slug, 200);
  });
  r.post(['/v1/videos/generations', '/v1/videos'], async (req, res) => {
    const body = validate(submitBody, jsonBodyOf(req));
    if (!body.model) throw new GatewayError('invalid_request', 'Invalid request: model: required');
    await submit(deps, req, res, body.model, 202);
  });
}

/**
 * The submit's body: `{}` when none was sent (the model's defaults), refused when one was sent that the JSON parser
 * did not read (text/plain, a form, no content type): running, and billing, a job without the input the client
 * sent would be worse than a 400.
 */
function jsonBodyOf(req: Request): unknown {
  if (req.body !== undefined) return req.body;
  const length = req.headers['content-length'];
  if (req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0'))
    throw new GatewayError('invalid_request', 'Invalid request: the body must be JSON, sent as Content-Type: application/json');
  return {};
}

async function submit(deps: SubmitDeps, req: Request, res: Response, slug: string, status: number): Promise<void> {
  const body: SubmitBody = validate(submitBody, jsonBodyOf(req));
  const query = validate(submitQuery, req.query);
  const model = refuseOtherCategory(deps.registry, slug, 'video', req.path);
  const ctx = contextOf(req);
  const idempotencyKey = ctx.idempotencyKey ?? null;
  // The model and the callback are part of the request: the slug (the queue route's path) and the query count too.
  const fingerprint = idempotencyKey ? requestFingerprint(`POST ${req.path}`, { slug, body, query }) : null;
  const settings = await deps.accounts.jobSettings(ctx.accountId);
  const ceiling = settings.jobConcurrency ?? deps.defaultConcurrency;

  const { job, created } = await deps.db.transaction(async (tx): Promise<{ job: JobRow; created: boolean }> => {
    await lockAccount(tx, ctx.accountId);
    if (idempotencyKey) {
      const existing = await findByIdempotencyKey(tx, ctx.accountId, idempotencyKey);
      if (existing && existing.request_fingerprint !== null && existing.request_fingerprint !== fingerprint)
        throw new GatewayError(
          'duplicate_request',
          `This Idempotency-Key was already used for job ${existing.id} with a different request (route or body); send a new key for a new request`,
        );
      if (existing) return { job: existing, created: false };
    }
    if ((await countInFlight(tx, ctx.accountId)) >= ceiling) throw await concurrencyRefusal(tx, ctx.accountId, ceiling);
    // The job's own idempotency is the row above; the hold gets none, so a sync request's key can never collide with it.
    const paid = await PaidCall.begin(deps, {
      ctx: { ...ctx, idempotencyKey: undefined },
      category: 'video',
      slugs: [slug],
      streamed: false,
      provider: body.provider,
      maxCostNano: body.max_cost,
      worstCase: (m) => videoWorstCase(m, body.n, body.duration),
    });
    try {
      const inserted = await insertJob(tx, {
        id: newRequestId('job'),
        accountId: ctx.accountId,
        keyId: ctx.keyId,
        model: paid.candidates[0].config.id,
        category: 'video',
        input: upstreamInput(body),
        n: body.n,
        durationSeconds: model ? heldSeconds(model, body.duration) : (body.duration ?? 0),
        webhookUrl: body.webhook_url ?? query.partner_webhook ?? null,
        idempotencyKey,
        requestFingerprint: fingerprint,
        gatewayRequestId: ctx.requestId,
        hold: holdRecordToJSON(paid.record),
      });
      await enqueueJobState(tx, inserted);
      // The job's row holds the hold from here: its worker closes it, whichever process that is.
      paid.handOff();
      return { job: inserted, created: true };
    } catch (e) {
      await paid.release('invalid_request');
      throw e;
    }
  });
  if (created) {
    deps.metrics?.counter('gateway_jobs_submitted_total', 'Jobs created, by model', ['model']).inc({ model: job.model });
    deps.onSubmitted();
  }
  res.status(status).json(submitView(job, await queuePosition(deps.db, job), deps.publicUrl));
}

/** 429 concurrency: frees when a job ends, not with time; Retry-After is an estimate from the account's recent jobs. */
async function concurrencyRefusal(db: Queryable, accountId: string, ceiling: number): Promise<GatewayError> {
  const { typical, oldestAgeSeconds } = await typicalJobSeconds(db, accountId);
  const estimate = typical !== null && oldestAgeSeconds !== null ? typical - oldestAgeSeconds : 30;
  const retryAfter = Math.max(1, Math.min(3600, Math.ceil(estimate)));
  return new GatewayError('rate_limited', `This account already has ${ceiling} jobs in flight, its ceiling; one must finish first`, {
    headers: { 'retry-after': String(retryAfter), 'x-gateway-limit-type': 'concurrency' },
  });
}
