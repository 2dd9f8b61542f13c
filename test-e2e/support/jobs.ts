import { waitFor } from '@gateway/testing';
import type { FakeFal, FakeFalJob } from './fake-fal';
import type { TestGateway } from './harness';
import { plainChatModel } from './config';

/** The fake fal's key reaches the gateway the way an operator's does: an environment variable the provider names. */
export const FAL_KEY_ENV = 'GW_E2E_FAL_KEY';
/** USD per second of video: 50,000,000 nano-USD, so every figure below is exact. */
export const VIDEO_RATE = '0.05';
export const JOB_ID = /^job_[a-z0-9]{24}$/;
export const REQ_ID = /^req_/;

/**
 * The jobs catalogue: one video model per fake fal behaviour, each on an endpoint of its own (circuits count
 * failures per endpoint), a second plain video model for the list's model filter, one with a default duration,
 * and a text model for the wrong-category refusal. Short poll interval and webhook backoff, loopback receivers
 * allowed.
 */
export function jobsConfig(falUrl: string, extra: { jobs?: Record<string, string>; webhooks?: Record<string, unknown> } = {}) {
  const video = (id: string, endpoints: string[], more: Record<string, unknown> = {}) => ({
    id,
    name: id,
    category: 'video',
    status: 'available',
    pricing: { second: VIDEO_RATE },
    endpoints: endpoints.map((model) => ({ provider: 'fal', model })),
    ...more,
  });
  return {
    providers: [
      { id: 'fal', kind: 'fal', base_url: falUrl, api_key_env: FAL_KEY_ENV, timeout_ms: 10_000 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      video('test/video', ['fake-ai/video']),
      video('test/video-b', ['fake-ai/video-b']),
      video('test/video-default', ['fake-ai/video-default'], { default_duration: 3 }),
      video('test/video-reject', ['fake-ai/video/reject']),
      video('test/video-result-500', ['fake-ai/video/result-500']),
      video('test/video-submit-500', ['fake-ai/video/submit-500', 'fake-ai/video-alt/submit-500']),
      video('test/video-soon', ['fake-ai/video'], { status: 'coming_soon' }),
      plainChatModel('sim', 'sim-1'),
    ],
    webhooks: { max_retries: 3, initial_backoff_ms: 50, allow_private_addresses: true, ...extra.webhooks },
    jobs: { poll_interval: '50ms', lease: '60s', timeout: '10m', ...extra.jobs },
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** A caller of one gateway with one key: every answer read whole, JSON parsed when it is JSON. */
export function jobsClient(url: () => string, key: () => string) {
  const call = async (
    method: string,
    path: string,
    opts: { body?: unknown; headers?: Record<string, string>; key?: string } = {},
  ): Promise<Answer> => {
    const r = await fetch(path.startsWith('http') ? path : `${url()}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${opts.key ?? key()}`,
        ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...opts.headers,
      },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    const text = await r.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: r.status, headers: r.headers, text, json };
  };

  /** A submit through /v1/videos (model in the body) or, with `queue`, /v1/queue/{model}. */
  const submit = (body: Record<string, unknown>, opts: { queue?: boolean; query?: string; headers?: Record<string, string>; key?: string } = {}) => {
    const { model, ...rest } = body;
    const path = opts.queue ? `/v1/queue/${model}` : '/v1/videos';
    return call('POST', `${path}${opts.query ?? ''}`, { body: opts.queue ? rest : body, headers: opts.headers, key: opts.key });
  };

  const status = (id: string, opts: { logs?: boolean; key?: string } = {}) =>
    call('GET', `/v1/queue/requests/${id}/status${opts.logs ? '?logs=1' : ''}`, { key: opts.key });

  /** Polls the status route, as a client does, until the job is COMPLETED; returns that status body. */
  const untilCompleted = async (id: string, timeoutMs = 20_000, key?: string) => {
    let last: Answer | undefined;
    await waitFor(
      async () => {
        last = await status(id, { key });
        if (last.status !== 200) throw new Error(`status of ${id} answered ${last.status}: ${last.text}`);
        return last.json.status === 'COMPLETED';
      },
      `job ${id} to be COMPLETED`,
      timeoutMs,
    );
    return last!.json;
  };

  /** Polls until the status body's wire status is `wire`. */
  const untilStatus = async (id: string, wire: 'IN_QUEUE' | 'IN_PROGRESS' | 'COMPLETED', timeoutMs = 20_000) => {
    let last: Answer | undefined;
    await waitFor(
      async () => {
        last = await status(id);
        return last.json?.status === wire;
      },
      `job ${id} to be ${wire}`,
      timeoutMs,
    );
    return last!.json;
  };

  const cancel = (id: string, key?: string) => call('PUT', `/v1/queue/requests/${id}/cancel`, { key });
  const result = (id: string, key?: string) => call('GET', `/v1/queue/requests/${id}`, { key });

  return { call, submit, status, untilCompleted, untilStatus, cancel, result };
}
export type JobsClient = ReturnType<typeof jobsClient>;

/** The fake's record of the upstream request a job made, found by a marker field of its input. */
export async function falJobOf(fal: FakeFal, marker: string, timeoutMs = 10_000): Promise<FakeFalJob> {
  let job: FakeFalJob | undefined;
  await waitFor(
    () => (job = [...fal.jobs.values()].find((j) => j.input.marker === marker)) !== undefined,
    `the fake fal to take ${marker}`,
    timeoutMs,
  );
  return job!;
}

/** The fake fal holds a job until released: IN_QUEUE for its first half of polls, IN_PROGRESS after. */
export const HOLD = 'polls-100000';
/** Makes a held job IN_PROGRESS from its next poll on (past the queued half, far from completion). */
export function startRunning(job: FakeFalJob): void {
  job.polls = Math.max(job.polls, Math.ceil(job.pollsToComplete / 2) + 1);
}
/** Lets a held job complete at its next poll. */
export function release(job: FakeFalJob): void {
  job.pollsToComplete = 0;
}

/** The account's exact lifetime usage in nano-USD, from the ledger. */
export async function usageNano(gw: Pick<TestGateway, 'ledger'>, accountId: string): Promise<bigint> {
  const [row] = await gw.ledger(`SELECT total_usage::text AS u, held::text AS h FROM accounts WHERE id = $1`, [accountId]);
  return BigInt(row.u);
}

export async function heldNano(gw: Pick<TestGateway, 'ledger'>, accountId: string): Promise<bigint> {
  const [row] = await gw.ledger(`SELECT held::text AS h FROM accounts WHERE id = $1`, [accountId]);
  return BigInt(row.h);
}

/** Every hold of the account, oldest first. */
export function holdsOf(gw: Pick<TestGateway, 'ledger'>, accountId: string) {
  return gw.ledger<{ request_id: string; amount: string; charge: string; state: string }>(
    `SELECT request_id, amount::text AS amount, charge::text AS charge, state FROM holds WHERE account_id = $1 ORDER BY created_at, id`,
    [accountId],
  );
}
