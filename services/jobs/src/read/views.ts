import { wireJobStatus } from '@gateway/events';
import { formatUsd } from '@gateway/money';
import type { JobRow } from '../store/job-row';
import { publicError } from '../transitions';

export const wireStatus = (job: JobRow) => wireJobStatus(job.status);
const outcomeOf = (job: JobRow) => (job.status === 'queued' || job.status === 'running' ? null : job.status);
const seconds = (from: Date | null, to: Date | null) => (from && to ? Math.max(0, (to.getTime() - from.getTime()) / 1000) : null);
const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The absolute URLs of a job: one form for both routes, under GATEWAY_PUBLIC_URL. */
export function jobUrls(publicUrl: string, id: string) {
  const base = `${publicUrl}/v1/queue/requests/${id}`;
  return { status_url: `${base}/status`, response_url: base, cancel_url: `${base}/cancel` };
}

export function submitView(job: JobRow, queuePosition: number | null, publicUrl: string) {
  return { request_id: job.id, status: wireStatus(job), queue_position: queuePosition, ...jobUrls(publicUrl, job.id) };
}

export function statusView(job: JobRow, queuePosition: number | null, withLogs: boolean) {
  return {
    request_id: job.id,
    status: wireStatus(job),
    outcome: outcomeOf(job),
    queue_position: queuePosition,
    ...(withLogs ? { logs: job.logs } : {}),
    metrics: { inference_time: job.inference_time, queue_time: seconds(job.created_at, job.started_at) },
    error: publicError(job.error),
  };
}

export function resultView(job: JobRow) {
  return {
    request_id: job.id,
    model: job.model,
    created: Math.floor(job.created_at.getTime() / 1000),
    outcome: outcomeOf(job),
    payload: job.payload,
    gateway_request_id: job.gateway_request_id,
    cost: job.charge_nano === null ? '0' : formatUsd(BigInt(job.charge_nano)),
    usage: job.usage ?? {},
  };
}

/**
 * A row of GET /v1/jobs: no payload; `cost` only once billing has applied the charge. `status` is the wire
 * vocabulary of every other job body, `outcome` the terminal stored one (the contract's row has both fields).
 */
export function listRowView(job: JobRow, queuePosition: number | null) {
  return {
    request_id: job.id,
    model: job.model,
    category: job.category,
    status: wireStatus(job),
    outcome: outcomeOf(job),
    queue_position: queuePosition,
    gateway_request_id: job.gateway_request_id,
    cost: job.cost_nano === null ? null : formatUsd(BigInt(job.cost_nano)),
    error_code: job.error?.code ?? null,
    created_at: job.created_at.toISOString(),
    started_at: iso(job.started_at),
    completed_at: iso(job.completed_at),
  };
}
