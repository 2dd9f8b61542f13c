import type { ProviderConfig, ResolvedEndpoint } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import { millisToSeconds, secondsToMillis, videoCharge } from '@gateway/pricing';
import { PaidCall, holdRecordFromJSON, type SpendDeps } from '@gateway/spend';
import { type QueueProtocol, type QueueTicket, classify } from '@gateway/upstreams';
import type { MediaFilesPort } from '../media/port';
import type { JobRow } from '../store/job-row';
import { releaseLease } from '../store/jobs';
import { endJob, markRunning, type TransitionDeps } from '../transitions';
import { collectMedia } from './collect-media';

export interface DriveDeps extends TransitionDeps {
  spend: SpendDeps;
  media: MediaFilesPort;
  publicUrl: string;
  protocolOf(kind: ProviderConfig['kind']): QueueProtocol | undefined;
  pollIntervalMs: number;
  timeoutMs: number;
  /** How long one upstream request of the worker may take. */
  requestTimeoutMs?: number;
}

const MAX_POLL_MS = 15_000;

/** The wait before the job's next poll: 1.5× longer each time, capped, with ±10% jitter so a burst of jobs spreads out. */
export function pollDelay(pollIntervalMs: number, polls: number, random = Math.random): number {
  const base = Math.min(MAX_POLL_MS, pollIntervalMs * 1.5 ** Math.min(polls, 30));
  return Math.round(base * (0.9 + 0.2 * random()));
}

export function endpointOf(deps: DriveDeps, job: JobRow): ResolvedEndpoint | undefined {
  return deps.spend.registry.get(job.model)?.endpoints.find((e) => e.key === job.endpoint_key);
}

/**
 * One step of a leased job: submit it upstream (with failover, once), or poll it and, once the upstream finished,
 * collect its media and end it. Every step ends by ending the job or by giving the lease back with the next poll's time.
 */
export async function driveJob(deps: DriveDeps, job: JobRow, owner: string): Promise<void> {
  const signal = AbortSignal.timeout(deps.requestTimeoutMs ?? 120_000);
  if (Date.now() - job.created_at.getTime() > deps.timeoutMs) {
    await endJob(deps, job.id, {
      outcome: 'failed',
      error: { code: 'upstream_unavailable', message: 'The job did not finish in time', status: 503 },
      facts: {},
    });
    return;
  }
  if (!job.ticket) return submitUpstream(deps, job, owner, signal);

  const endpoint = endpointOf(deps, job);
  const protocol = endpoint && deps.protocolOf(endpoint.provider.kind);
  if (!endpoint || !protocol) {
    await endJob(deps, job.id, {
      outcome: 'failed',
      error: { code: 'upstream_unavailable', message: 'The endpoint that took this job is no longer configured', status: 503 },
      facts: {},
    });
    return;
  }
  const next = pollDelay(deps.pollIntervalMs, job.polls);
  let status: Awaited<ReturnType<QueueProtocol['status']>>;
  try {
    status = await protocol.status(endpoint, job.ticket, { logs: true, signal });
  } catch (e) {
    deps.logger.warn({ jobId: job.id, err: classify(e).message }, 'job status poll failed; polling again');
    await releaseLease(deps.db, job.id, owner, next);
    return;
  }
  const progress = { logs: JSON.stringify(status.logs), inference_time: status.inferenceTime };
  if (status.state === 'IN_QUEUE') return void (await releaseLease(deps.db, job.id, owner, next, progress));
  if (job.status === 'queued') await markRunning(deps, job, owner);
  if (status.state === 'IN_PROGRESS') return void (await releaseLease(deps.db, job.id, owner, next, progress));
  await releaseLease(deps.db, job.id, owner, 0, progress);
  await finishFromResult(deps, { ...job, logs: status.logs, inference_time: status.inferenceTime }, endpoint, protocol, job.ticket, signal);
}

async function submitUpstream(deps: DriveDeps, job: JobRow, owner: string, signal: AbortSignal): Promise<void> {
  const record = holdRecordFromJSON(job.hold);
  const ctx = { requestId: job.gateway_request_id, accountId: job.account_id, keyId: job.key_id, startedAt: record.startedAt };
  let paid: PaidCall;
  try {
    paid = PaidCall.resume(deps.spend, { ctx, category: 'video', slugs: [job.model], streamed: false }, record);
  } catch {
    // Nothing can serve the model right now (every circuit open): the job waits in its queue, as queued work does.
    await releaseLease(deps.db, job.id, owner, pollDelay(deps.pollIntervalMs, job.polls));
    return;
  }
  try {
    const { result: ticket, endpoint } = await paid.call(async (_m, ep) => {
      const protocol = deps.protocolOf(ep.provider.kind);
      if (!protocol) throw new Error(`provider kind ${ep.provider.kind} has no job queue`);
      return protocol.submit(ep, job.input, { signal, requestId: job.gateway_request_id });
    });
    const saved = await releaseLease(deps.db, job.id, owner, deps.pollIntervalMs, { ticket: JSON.stringify(ticket), endpoint_key: endpoint.key });
    if (!saved) {
      // Cancelled (or taken over) while the submit was in flight: the upstream job must not run on unpaid.
      const protocol = deps.protocolOf(endpoint.provider.kind);
      await protocol?.cancel(endpoint, ticket, { signal }).catch(() => undefined);
    }
  } catch (e) {
    // PaidCall released the hold already; the job ends failed with the same code the synchronous routes answer.
    const err = e instanceof GatewayError ? e : new GatewayError('upstream_unavailable', 'The upstream could not take the job');
    await endJob(deps, job.id, {
      outcome: 'failed',
      error: { code: err.code, message: err.message, status: err.status },
      facts: {},
      holdClosed: true,
    });
  }
}

async function finishFromResult(
  deps: DriveDeps,
  job: JobRow,
  endpoint: ResolvedEndpoint,
  protocol: QueueProtocol,
  ticket: QueueTicket,
  signal: AbortSignal,
): Promise<void> {
  const facts = { model: job.model, attempts: 1, fallbackUsed: false, provider: endpoint.provider.id };
  let result: Record<string, unknown>;
  try {
    result = await protocol.result(endpoint, ticket, { signal });
  } catch (e) {
    const err = classify(e);
    if (err.clientFault) {
      await endJob(deps, job.id, {
        outcome: 'failed',
        error: { code: 'invalid_request', message: `The model refused the job: ${err.message}`, status: 400 },
        facts,
      });
    } else if (err.status !== undefined && err.status !== 429) {
      // The upstream answered the finished job with its failure: asking again would not change it.
      await endJob(deps, job.id, {
        outcome: 'failed',
        error: { code: 'upstream_unavailable', message: 'The upstream failed the job', status: 503 },
        facts,
      });
    } else {
      // No answer, or a 429: the worker asks again after the next poll delay, until the job's timeout.
      throw e;
    }
    return;
  }
  const model = deps.spend.registry.get(job.model);
  if (!model) {
    await endJob(deps, job.id, {
      outcome: 'failed',
      error: { code: 'upstream_unavailable', message: 'The model is no longer configured', status: 503 },
      facts,
    });
    return;
  }
  const collected = await collectMedia(
    result,
    { protocol, endpoint, media: deps.media, publicUrl: deps.publicUrl, signal },
    { accountId: job.account_id, requestId: job.gateway_request_id },
  );
  // Billed on the seconds delivered: the files' own length; the duration asked for when a file cannot be measured.
  const reported = collected.measuredMillis;
  const millis = reported ?? secondsToMillis(Number(job.duration_seconds)) * BigInt(Math.max(1, collected.videos || job.n));
  await endJob(deps, job.id, {
    outcome: 'succeeded',
    payload: collected.payload,
    videoFileId: collected.videoFileId,
    usage: {
      chargeNano: videoCharge(model, millis),
      videoSeconds: millisToSeconds(millis),
      tokensPrompt: 0,
      tokensCompletion: 0,
      finishReason: null,
      mediaCompletion: collected.videos,
      estimated: reported === null,
    },
    facts,
  });
}
