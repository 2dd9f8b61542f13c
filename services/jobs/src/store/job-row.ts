import type { JobStatus } from '@gateway/events';
import type { QueueLog, QueueTicket } from '@gateway/upstreams';

/** The failure of a job that did not succeed: the envelope's code and message, and the status its result route answers. */
export interface JobError {
  code: string;
  message: string;
  status: number;
}

/** A row of `jobs` as the service reads it (timestamps as Date, numerics as strings: no float touches money). */
export interface JobRow {
  id: string;
  account_id: string;
  key_id: string;
  model: string;
  category: string;
  status: JobStatus;
  input: Record<string, unknown>;
  n: number;
  duration_seconds: string;
  webhook_url: string | null;
  idempotency_key: string | null;
  /** Of the submit that carried idempotency_key; null on rows from before 002_request_fingerprint. */
  request_fingerprint: string | null;
  gateway_request_id: string;
  hold: unknown;
  endpoint_key: string | null;
  ticket: QueueTicket | null;
  logs: QueueLog[];
  inference_time: number | null;
  payload: Record<string, unknown> | null;
  video_file_id: string | null;
  usage: Record<string, string> | null;
  charge_nano: string | null;
  cost_nano: string | null;
  error: JobError | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  next_poll_at: Date;
  polls: number;
  lease_owner: string | null;
  lease_until: Date | null;
  [k: string]: unknown;
}

export const IN_FLIGHT: readonly JobStatus[] = ['queued', 'running'];
export const isFinished = (s: JobStatus) => !IN_FLIGHT.includes(s);

/** Rows come back from pg and PGlite with timestamps as Date or string; the service always sees Date. */
export function normalise(row: Record<string, unknown>): JobRow {
  const r = row as JobRow;
  for (const k of ['created_at', 'started_at', 'completed_at', 'next_poll_at', 'lease_until'] as const) {
    const v = r[k] as unknown;
    if (typeof v === 'string') (r as Record<string, unknown>)[k] = new Date(v);
  }
  for (const k of ['duration_seconds', 'charge_nano', 'cost_nano'] as const) {
    const v = r[k] as unknown;
    if (v !== null && v !== undefined && typeof v !== 'string') (r as Record<string, unknown>)[k] = String(v);
  }
  return r;
}
