import { z } from 'zod';
import type { Dispatcher } from 'undici';
import type { QueueLog, QueueStatus, QueueTicket } from '../types';
import { UpstreamError } from '../upstream-error';
import { readText } from '../http';
import { parsed } from '../answer-schema';

const submitAnswer = z.object({
  request_id: z.string().min(1),
  status_url: z.string().optional(),
  response_url: z.string().optional(),
  cancel_url: z.string().optional(),
});

const logLine = z.object({
  message: z.string(),
  level: z.string().optional(),
  timestamp: z.string().optional(),
});

const statusAnswer = z.object({
  status: z.enum(['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED']),
  queue_position: z.number().int().nonnegative().nullish(),
  logs: z.array(logLine).nullish(),
  metrics: z.object({ inference_time: z.number().nonnegative().nullish() }).partial().nullish(),
});

/** Where a failure came from: a refused submit fails over unless the input is at fault; a failed result ends the job. */
export type Stage = 'submit' | 'status' | 'result' | 'cancel';

/**
 * 4xx answers about our access or the queue itself, not the input: another endpoint, or a later poll, may do better.
 * Any other 4xx on a result is the model refusing the input (fal's 422 validation, content policy).
 */
const NOT_THE_INPUT = new Set([401, 403, 404, 408, 409, 429]);

async function json(res: Dispatcher.ResponseData): Promise<unknown> {
  const text = await readText(res);
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError('protocol', 'upstream answer is not JSON');
  }
}

export async function readTicket(res: Dispatcher.ResponseData): Promise<QueueTicket> {
  const a = parsed(submitAnswer, await json(res), 'submit answer');
  return { upstreamId: a.request_id, statusUrl: a.status_url, responseUrl: a.response_url, cancelUrl: a.cancel_url };
}

export async function readStatus(res: Dispatcher.ResponseData, withLogs: boolean): Promise<QueueStatus> {
  const a = parsed(statusAnswer, await json(res), 'status');
  const logs: QueueLog[] = withLogs
    ? (a.logs ?? []).map((l) => ({ message: l.message, level: l.level ?? 'INFO', timestamp: l.timestamp ?? new Date().toISOString() }))
    : [];
  return {
    state: a.status,
    queuePosition: a.status === 'IN_QUEUE' ? (a.queue_position ?? null) : null,
    logs,
    inferenceTime: a.metrics?.inference_time ?? null,
  };
}

export async function readOutput(res: Dispatcher.ResponseData): Promise<Record<string, unknown>> {
  const out = await json(res);
  if (!out || typeof out !== 'object' || Array.isArray(out)) throw new UpstreamError('protocol', 'upstream result is not an object');
  return out as Record<string, unknown>;
}

/** fal's `detail`: a string, or FastAPI's list of `{loc, msg, type}`; a content-policy refusal says so in `type`. */
function detailOf(text: string): { message: string; contentPolicy: boolean } {
  try {
    const detail = (JSON.parse(text) as { detail?: unknown })?.detail;
    if (typeof detail === 'string') return { message: detail, contentPolicy: /content.?policy/i.test(detail) };
    if (Array.isArray(detail)) {
      const items = detail as Array<{ msg?: unknown; type?: unknown }>;
      return {
        message: items.map((d) => (typeof d?.msg === 'string' ? d.msg : JSON.stringify(d))).join('; '),
        contentPolicy: items.some((d) => typeof d?.type === 'string' && /content.?policy/i.test(d.type)),
      };
    }
  } catch {
    /* not JSON: keep the text */
  }
  return { message: text, contentPolicy: false };
}

/** A 4xx or 5xx as an UpstreamError carrying fal's reason (never the URL: a client fault's message reaches the client). */
export async function failureOf(res: Dispatcher.ResponseData, stage: Stage): Promise<UpstreamError> {
  const status = res.statusCode;
  const { message, contentPolicy } = detailOf(await res.body.text().catch(() => ''));
  const text = `upstream answered ${status}: ${message.slice(0, 500)}`;
  if (stage === 'status' || stage === 'cancel') return new UpstreamError('status', text, status, false);
  if (contentPolicy) return new UpstreamError('status', text, status, true);
  if (stage === 'result') return new UpstreamError('status', text, status, status < 500 && !NOT_THE_INPUT.has(status));
  return new UpstreamError('status', text, status);
}
