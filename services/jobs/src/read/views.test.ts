import type { JobRow } from '../store/job-row';
import { listRowView, resultView, statusView, submitView } from './views';

const job = (over: Partial<JobRow> = {}): JobRow =>
  ({
    id: 'job_abc',
    account_id: 'acct_1',
    key_id: 'key_1',
    model: 'a/video',
    category: 'video',
    status: 'queued',
    input: {},
    n: 1,
    duration_seconds: '5',
    webhook_url: null,
    idempotency_key: null,
    gateway_request_id: 'req_1',
    hold: {},
    endpoint_key: null,
    ticket: null,
    logs: [{ message: 'm', level: 'INFO', timestamp: '2026-01-01T00:00:00.000Z' }],
    inference_time: null,
    payload: null,
    video_file_id: null,
    usage: null,
    charge_nano: null,
    cost_nano: null,
    error: null,
    created_at: new Date('2026-01-01T00:00:00.000Z'),
    started_at: null,
    completed_at: null,
    next_poll_at: new Date(),
    polls: 0,
    lease_owner: null,
    lease_until: null,
    ...over,
  }) as JobRow;

describe('job views: the contract shapes', () => {
  it('submit: absolute URLs under the public URL', () => {
    expect(submitView(job(), 1, 'https://gw.example')).toEqual({
      request_id: 'job_abc',
      status: 'IN_QUEUE',
      queue_position: 1,
      status_url: 'https://gw.example/v1/queue/requests/job_abc/status',
      response_url: 'https://gw.example/v1/queue/requests/job_abc',
      cancel_url: 'https://gw.example/v1/queue/requests/job_abc/cancel',
    });
  });

  it('status: logs only when asked; metrics in seconds, null when unknown; outcome null until terminal', () => {
    expect(statusView(job(), 2, false)).toEqual({
      request_id: 'job_abc',
      status: 'IN_QUEUE',
      outcome: null,
      queue_position: 2,
      metrics: { inference_time: null, queue_time: null },
      error: null,
    });
    const running = job({ status: 'running', started_at: new Date('2026-01-01T00:00:01.500Z'), inference_time: 0.25 });
    expect(statusView(running, null, true)).toMatchObject({
      status: 'IN_PROGRESS',
      logs: running.logs,
      metrics: { inference_time: 0.25, queue_time: 1.5 },
    });
  });

  it('every terminal state is COMPLETED, the outcome says which, and the error carries code and message only', () => {
    for (const status of ['succeeded', 'failed', 'canceled'] as const) {
      expect(statusView(job({ status }), null, false)).toMatchObject({ status: 'COMPLETED', outcome: status });
    }
    const failed = job({ status: 'failed', error: { code: 'invalid_request', message: 'refused', status: 400 } });
    expect(statusView(failed, null, false).error).toEqual({ code: 'invalid_request', message: 'refused' });
  });

  it('result: the cost as an exact string, created in unix seconds', () => {
    const done = job({ status: 'succeeded', charge_nano: '275000000', usage: { video_seconds: '5.5' }, payload: { video: { url: 'u' } } });
    expect(resultView(done)).toEqual({
      request_id: 'job_abc',
      model: 'a/video',
      created: 1767225600,
      outcome: 'succeeded',
      payload: { video: { url: 'u' } },
      gateway_request_id: 'req_1',
      cost: '0.275',
      usage: { video_seconds: '5.5' },
    });
  });

  it('list row: cost null until billing applied it; no payload; times null until reached', () => {
    const row = listRowView(job({ status: 'succeeded', charge_nano: '1000', payload: { x: 1 } }), null);
    expect(row.cost).toBeNull();
    expect(row).not.toHaveProperty('payload');
    expect(row.started_at).toBeNull();
    expect(listRowView(job({ status: 'succeeded', cost_nano: '1000' }), null).cost).toBe('0.000001');
  });

  it('list row: the wire status every job body shows, the stored terminal one as outcome', () => {
    expect(listRowView(job({ status: 'queued' }), 1)).toMatchObject({ status: 'IN_QUEUE', outcome: null, queue_position: 1 });
    expect(listRowView(job({ status: 'running' }), null)).toMatchObject({ status: 'IN_PROGRESS', outcome: null });
    for (const s of ['succeeded', 'failed', 'canceled'] as const) {
      expect(listRowView(job({ status: s }), null)).toMatchObject({ status: 'COMPLETED', outcome: s });
    }
  });
});
