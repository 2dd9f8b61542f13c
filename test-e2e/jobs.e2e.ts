import { silentMp4 } from '@gateway/upstreams';
import { waitFor } from '@gateway/testing';
import { type FakeFal, startFakeFal } from './support/fake-fal';
import {
  closedHold,
  expectReleased,
  generationOf,
  holdCount,
  type Mode,
  settled,
  type TestGateway,
  useGatewaySuite,
  REPLICATED_FLEET,
} from './support/harness';
import {
  FAL_KEY_ENV,
  falJobOf,
  HOLD,
  heldNano,
  holdsOf,
  JOB_ID,
  type JobsClient,
  jobsClient,
  jobsConfig,
  REQ_ID,
  release,
  startRunning,
  usageNano,
  VIDEO_RATE,
} from './support/jobs';
import { nano } from './support/money';

const modes: Mode[] = ['embedded', REPLICATED_FLEET];
const FILE_URL = /\/v1\/files\/file_[a-z0-9]{24}$/;
/** `seconds` of video at the catalogue's rate, in nano-USD. */
const videoCost = (seconds: number) => BigInt(seconds) * nano(VIDEO_RATE);
const usd = (n: bigint) => {
  const s = n.toString().padStart(10, '0');
  const frac = s.slice(-9).replace(/0+$/, '');
  return `${BigInt(s.slice(0, -9))}${frac ? `.${frac}` : ''}`;
};

describe.each(modes)('jobs (queue and video routes) through the %s gateway', (mode) => {
  let fal: FakeFal;
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let c: JobsClient;
  let falHost: string;
  let seq = 0;
  /** A marker unique to one submit, forwarded upstream with the model's input, by which the fake's record is found. */
  const marker = (what: string) => `${mode}-${what}-${++seq}`;

  useGatewaySuite(
    mode,
    {
      upstreams: async () => {
        const f = await startFakeFal();
        process.env[FAL_KEY_ENV] = f.key;
        return f;
      },
      config: (f) => jobsConfig(f.url),
      credits: 100,
    },
    (s) => {
      ({ upstreams: fal, gw, acct } = s);
      c = jobsClient(
        () => gw.url,
        () => acct.key,
      );
      falHost = new URL(fal.url).host;
    },
  );

  /** The job list row of a job, as its owner sees it. */
  const listRow = async (id: string, key = acct.key) => {
    const r = await c.call('GET', '/v1/jobs?limit=200', { key });
    expect(r.status).toBe(200);
    return (r.json.data as any[]).find((row) => row.request_id === id);
  };

  describe('success', () => {
    it('POST /v1/videos answers 202 with the submit shape; the job runs to COMPLETED, is charged duration × n × rate once', async () => {
      const m = marker('ok');
      const usageBefore = await usageNano(gw, acct.accountId);
      const sub = await c.submit({ model: 'test/video', prompt: 'a cat on a boat', duration: 4, seed: 7, style: 'noir', marker: m, fake: HOLD });
      expect(sub.status).toBe(202);
      const id = sub.json.request_id;
      expect(sub.json).toEqual({
        request_id: expect.stringMatching(JOB_ID),
        status: 'IN_QUEUE',
        queue_position: expect.any(Number),
        status_url: `${gw.url}/v1/queue/requests/${id}/status`,
        response_url: `${gw.url}/v1/queue/requests/${id}`,
        cancel_url: `${gw.url}/v1/queue/requests/${id}/cancel`,
      });
      expect(Number.isInteger(sub.json.queue_position) && sub.json.queue_position >= 1).toBe(true);

      // The upstream gets the model's own input: unknown fields through, the gateway's fields (model, webhook_url) not.
      const upstream = await falJobOf(fal, m);
      expect(upstream.model).toBe('fake-ai/video');
      expect(upstream.input).toEqual({ prompt: 'a cat on a boat', duration: 4, seed: 7, style: 'noir', marker: m, fake: HOLD, n: 1 });

      // In flight: the result routes answer 202, the content 400, the list row has no cost, the duration × n × rate is held.
      const running = await c.status(id);
      expect(running.status).toBe(200);
      expect(running.json).toMatchObject({ request_id: id, outcome: null, error: null });
      expect(['IN_QUEUE', 'IN_PROGRESS']).toContain(running.json.status);
      const pending = await c.call('GET', sub.json.response_url);
      expect(pending.status).toBe(202);
      expect(pending.json).toEqual({ request_id: id, status: expect.stringMatching(/^IN_(QUEUE|PROGRESS)$/), queue_position: expect.anything() });
      const content = await c.call('GET', `/v1/videos/${id}/content`);
      expect(content.status).toBe(400);
      expect(content.json.error).toMatchObject({ code: 'invalid_request', request_id: expect.stringMatching(REQ_ID) });
      const inFlight = await listRow(id);
      expect(inFlight).toMatchObject({ request_id: id, model: 'test/video', category: 'video', outcome: null, cost: null, completed_at: null });
      const hold = (await holdsOf(gw, acct.accountId)).find((h) => h.request_id === inFlight.gateway_request_id);
      expect(hold).toMatchObject({ state: 'open', amount: String(videoCost(4)) });

      release(upstream);
      const done = await c.untilCompleted(id);
      expect(done).toEqual({
        request_id: id,
        status: 'COMPLETED',
        outcome: 'succeeded',
        queue_position: null,
        metrics: { inference_time: 1.25, queue_time: expect.any(Number) },
        error: null,
      });
      expect(done.metrics.queue_time).toBeGreaterThanOrEqual(0);
      // Logs only when asked for, as {message, level, timestamp}.
      const withLogs = await c.status(id, { logs: true });
      expect(withLogs.json.logs.length).toBeGreaterThan(0);
      for (const line of withLogs.json.logs)
        expect(line).toMatchObject({ message: expect.any(String), level: expect.any(String), timestamp: expect.any(String) });

      const result = await c.call('GET', sub.json.response_url);
      expect(result.status).toBe(200);
      expect(result.text).not.toContain(falHost);
      const cost = usd(videoCost(4));
      expect(result.json).toEqual({
        request_id: id,
        model: 'test/video',
        created: expect.any(Number),
        outcome: 'succeeded',
        payload: {
          video: { url: expect.stringMatching(FILE_URL), content_type: 'video/mp4', file_name: 'output-0.mp4', file_size: silentMp4(4).length },
          seconds: 4,
        },
        gateway_request_id: expect.stringMatching(REQ_ID),
        cost,
        usage: { video_seconds: '4' },
      });
      expect(result.json.payload.video.url.startsWith(`${gw.url}/v1/files/`)).toBe(true);
      expect(Math.abs(result.json.created - Date.now() / 1000)).toBeLessThan(600);
      // GET /v1/videos/{id} is the result route.
      const video = await c.call('GET', `/v1/videos/${id}`);
      expect(video.status).toBe(200);
      expect(video.json).toEqual(result.json);

      // The money: the hold settled at the charge, the balance moved by exactly it, /v1/generation agrees.
      const requestId = result.json.gateway_request_id;
      expect(requestId).toBe(inFlight.gateway_request_id);
      expect(await closedHold(gw, acct.accountId, requestId)).toEqual({
        amount: String(videoCost(4)),
        charge: String(videoCost(4)),
        state: 'settled',
      });
      expect((await usageNano(gw, acct.accountId)) - usageBefore).toBe(nano(cost));
      expect(await generationOf(gw, acct.key, requestId)).toMatchObject({ id: requestId, model: 'test/video', status: 'succeeded', cost });

      // The list's cost is billing's applied figure: null until it lands, then the result's.
      let row: any;
      await waitFor(async () => (row = await listRow(id)).cost !== null, 'the list row to carry the applied cost', 10_000);
      expect(row).toMatchObject({ status: 'COMPLETED', outcome: 'succeeded', cost, error_code: null, queue_position: null });
      expect(row.completed_at).not.toBeNull();
      expect(row.started_at).not.toBeNull();

      // The video itself: mp4, ranges.
      const file = await fetch(`${gw.url}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${acct.key}` } });
      const bytes = Buffer.from(await file.arrayBuffer());
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toBe('video/mp4');
      expect(file.headers.get('accept-ranges')).toBe('bytes');
      expect(bytes).toEqual(silentMp4(4));
      const part = await fetch(`${gw.url}/v1/videos/${id}/content`, { headers: { authorization: `Bearer ${acct.key}`, range: 'bytes=0-7' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes 0-7/${bytes.length}`);
      expect(Buffer.from(await part.arrayBuffer())).toEqual(bytes.subarray(0, 8));
      // The payload's file URL serves the same bytes.
      const viaFile = await fetch(result.json.payload.video.url, { headers: { authorization: `Bearer ${acct.key}` } });
      expect(Buffer.from(await viaFile.arrayBuffer())).toEqual(bytes);
    });

    it('POST /v1/queue/{author/slug} takes the model from the whole path; the body is the input (webhook_url not forwarded)', async () => {
      const m = marker('queue');
      const sub = await c.submit(
        { model: 'test/video', prompt: 'queue route', duration: 2, extra: { nested: [1, 2] }, webhook_url: 'https://127.0.0.1:9/never', marker: m },
        { queue: true },
      );
      // The code answers the queue route 200 (the video routes 202); the contract names only the shape.
      expect(sub.status).toBe(200);
      expect(sub.json).toMatchObject({ request_id: expect.stringMatching(JOB_ID), status: 'IN_QUEUE' });
      expect(sub.json.queue_position).toBeGreaterThanOrEqual(1);
      expect(sub.json.status_url).toBe(`${gw.url}/v1/queue/requests/${sub.json.request_id}/status`);
      const upstream = await falJobOf(fal, m);
      expect(upstream.input).toEqual({ prompt: 'queue route', duration: 2, extra: { nested: [1, 2] }, marker: m, n: 1 });
      const done = await c.untilCompleted(sub.json.request_id);
      expect(done.outcome).toBe('succeeded');
      // Both path forms of the status and result routes answer the same job.
      const byModel = await c.call('GET', `/v1/queue/test/video/requests/${sub.json.request_id}/status`);
      expect(byModel.json).toMatchObject({ request_id: sub.json.request_id, outcome: 'succeeded' });
      const result = await c.call('GET', `/v1/queue/test/video/requests/${sub.json.request_id}`);
      expect(result.json).toMatchObject({ cost: usd(videoCost(2)), usage: { video_seconds: '2' } });
      // The wrong model in the path is no job of that model.
      expect((await c.call('GET', `/v1/queue/test/video-b/requests/${sub.json.request_id}/status`)).status).toBe(404);
    });

    it('n outputs: holds and charges duration × n × rate, on the seconds of the videos delivered', async () => {
      const usageBefore = await usageNano(gw, acct.accountId);
      const sub = await c.submit({ model: 'test/video', prompt: 'twins', duration: 2, n: 2, marker: marker('n2') });
      expect(sub.status).toBe(202);
      await c.untilCompleted(sub.json.request_id);
      const result = await c.result(sub.json.request_id);
      const expected = usd(videoCost(2 * 2));
      const hold = await closedHold(gw, acct.accountId, result.json.gateway_request_id);
      // The fake's result lists the first video twice (as `video` and as `videos[0]`): two videos of 2 s were delivered.
      expect({ cost: result.json.cost, usage: result.json.usage, hold }).toEqual({
        cost: expected,
        usage: { video_seconds: '4' },
        hold: { amount: String(videoCost(4)), charge: String(videoCost(4)), state: 'settled' },
      });
      expect((await usageNano(gw, acct.accountId)) - usageBefore).toBe(nano(expected));
    });

    it('without a duration the model default_duration sizes the hold; the charge never passes it, and the result says what was charged', async () => {
      const sub = await c.submit({ model: 'test/video-default', prompt: 'default', marker: marker('default') });
      await c.untilCompleted(sub.json.request_id);
      const result = await c.result(sub.json.request_id);
      // The fake makes 5 s when no duration is given: held for 3 s (the model default); the ledger caps a charge at its hold.
      const hold = await closedHold(gw, acct.accountId, result.json.gateway_request_id);
      expect(hold).toEqual({ amount: String(videoCost(3)), charge: String(videoCost(3)), state: 'settled' });
      expect(result.json.usage).toEqual({ video_seconds: '5' });
      const generation = await generationOf(gw, acct.key, result.json.gateway_request_id);
      // The result's cost is the charge to the balance, as /v1/generation reports it.
      expect({ result: result.json.cost, generation: generation.cost }).toEqual({ result: usd(videoCost(3)), generation: usd(videoCost(3)) });
    });
  });

  describe('failure', () => {
    const failedJob = async (model: string, what: string) => {
      const usageBefore = await usageNano(gw, acct.accountId);
      const sub = await c.submit({ model, prompt: what, duration: 3, marker: marker(what) });
      expect(sub.status).toBe(202);
      const done = await c.untilCompleted(sub.json.request_id);
      const row = await listRow(sub.json.request_id);
      return { id: sub.json.request_id, done, row, usageBefore };
    };

    it('a content rejection ends the job failed; the result route answers 400 invalid_request; the hold is released', async () => {
      const { id, done, row, usageBefore } = await failedJob('test/video-reject', 'reject');
      expect(done).toMatchObject({ status: 'COMPLETED', outcome: 'failed', error: { code: 'invalid_request', message: expect.any(String) } });
      const result = await c.result(id);
      expect(result.status).toBe(400);
      expect(result.json).toEqual({ error: { code: 'invalid_request', message: expect.any(String), request_id: expect.stringMatching(REQ_ID) } });
      expect(result.text).not.toContain(falHost);
      expect((await c.call('GET', `/v1/videos/${id}`)).status).toBe(400);
      const content = await c.call('GET', `/v1/videos/${id}/content`);
      expect(content.status).toBe(400);
      await expectReleased(gw, acct.accountId, row.gateway_request_id, 'invalid_request');
      expect(await usageNano(gw, acct.accountId)).toBe(usageBefore);
      await waitFor(async () => (await listRow(id)).cost !== null, 'the list row to carry the applied cost', 10_000);
      expect(await listRow(id)).toMatchObject({ status: 'COMPLETED', outcome: 'failed', error_code: 'invalid_request', cost: '0' });
    });

    it('an upstream failure of the result ends the job failed with 503 upstream_unavailable; nothing charged', async () => {
      const { id, done, row, usageBefore } = await failedJob('test/video-result-500', 'result-500');
      expect(done).toMatchObject({ outcome: 'failed', error: { code: 'upstream_unavailable' } });
      const result = await c.result(id);
      expect(result.status).toBe(503);
      expect(result.json.error).toMatchObject({ code: 'upstream_unavailable', request_id: expect.stringMatching(REQ_ID) });
      await expectReleased(gw, acct.accountId, row.gateway_request_id, 'upstream_unavailable');
      expect(await usageNano(gw, acct.accountId)).toBe(usageBefore);
    });

    it('a submit that fails on every endpoint ends the job failed with 503; nothing charged', async () => {
      const sent = fal.requests.length;
      const { id, done, row, usageBefore } = await failedJob('test/video-submit-500', 'submit-500');
      expect(done).toMatchObject({ outcome: 'failed', error: { code: 'upstream_unavailable' } });
      const submits = fal.requests.slice(sent).filter((r) => r.method === 'POST');
      expect(submits.map((r) => r.path).sort()).toEqual(['/fake-ai/video-alt/submit-500', '/fake-ai/video/submit-500']);
      const result = await c.result(id);
      expect(result.status).toBe(503);
      expect(result.json.error.code).toBe('upstream_unavailable');
      expect(await closedHold(gw, acct.accountId, row.gateway_request_id)).toMatchObject({ state: 'released', charge: '0' });
      expect(await usageNano(gw, acct.accountId)).toBe(usageBefore);
    });
  });

  describe('cancel', () => {
    /** A cancelled job: 200 with the status body, again on repeat; result 409 canceled; hold released; upstream told. */
    const expectCancelled = async (id: string, upstreamId: string) => {
      const first = await c.cancel(id);
      expect(first.status).toBe(200);
      expect(first.json).toEqual({
        request_id: id,
        status: 'COMPLETED',
        outcome: 'canceled',
        queue_position: null,
        metrics: expect.any(Object),
        error: { code: 'canceled', message: expect.any(String) },
      });
      const again = await c.cancel(id);
      expect(again.status).toBe(200);
      expect(again.json).toMatchObject({ status: 'COMPLETED', outcome: 'canceled' });
      expect((await c.status(id)).json).toMatchObject({ status: 'COMPLETED', outcome: 'canceled', queue_position: null });
      for (const path of [`/v1/queue/requests/${id}`, `/v1/videos/${id}`]) {
        const r = await c.call('GET', path);
        expect(r.status).toBe(409);
        expect(r.json.error).toMatchObject({ code: 'canceled', request_id: expect.stringMatching(REQ_ID) });
      }
      // The content of a cancelled job: the code answers 409 canceled (the contract's 400 is for unfinished jobs).
      const content = await c.call('GET', `/v1/videos/${id}/content`);
      expect(content.status).toBe(409);
      expect(content.json.error.code).toBe('canceled');
      await fal.received((r) => r.method === 'PUT' && r.path.includes(`/requests/${upstreamId}/cancel`), 'the upstream cancel');
      const row = await listRow(id);
      expect(row).toMatchObject({ status: 'COMPLETED', outcome: 'canceled', error_code: 'canceled' });
      await expectReleased(gw, acct.accountId, row.gateway_request_id, 'canceled');
    };

    it('before start: a job waiting in the queue is cancelled, its hold released', async () => {
      const m = marker('cancel-queued');
      const usageBefore = await usageNano(gw, acct.accountId);
      const sub = await c.submit({ model: 'test/video', prompt: 'wait', duration: 3, marker: m, fake: HOLD });
      const upstream = await falJobOf(fal, m);
      // The gateway has the upstream's ticket and the job still waits in the queue.
      await waitFor(() => upstream.polls > 0, 'the worker to poll the held job');
      expect((await c.status(sub.json.request_id)).json).toMatchObject({ status: 'IN_QUEUE', outcome: null });
      await expectCancelled(sub.json.request_id, upstream.id);
      expect(upstream.canceled).toBe(true);
      expect(await usageNano(gw, acct.accountId)).toBe(usageBefore);
    });

    it('while running: an IN_PROGRESS job is cancelled upstream and here, its hold released', async () => {
      const m = marker('cancel-running');
      const usageBefore = await usageNano(gw, acct.accountId);
      const sub = await c.submit({ model: 'test/video', prompt: 'run', duration: 3, marker: m, fake: HOLD });
      const upstream = await falJobOf(fal, m);
      startRunning(upstream);
      await c.untilStatus(sub.json.request_id, 'IN_PROGRESS');
      expect((await c.status(sub.json.request_id)).json.queue_position).toBeNull();
      await expectCancelled(sub.json.request_id, upstream.id);
      expect(await usageNano(gw, acct.accountId)).toBe(usageBefore);
    });

    it('after finish: 200 with the outcome unchanged, the result still served, charged once', async () => {
      const sub = await c.submit({ model: 'test/video', prompt: 'done', duration: 1, marker: marker('cancel-done') });
      await c.untilCompleted(sub.json.request_id);
      const before = await c.result(sub.json.request_id);
      // COMPLETED comes before billing has applied the job's settle (it travels through the outbox and the bus):
      // read the usage once the hold has closed, or that settle lands between the two reads.
      await settled(gw, acct.accountId);
      const usageBefore = await usageNano(gw, acct.accountId);
      for (let i = 0; i < 2; i++) {
        const r = await c.cancel(sub.json.request_id);
        expect(r.status).toBe(200);
        expect(r.json).toMatchObject({ request_id: sub.json.request_id, status: 'COMPLETED', outcome: 'succeeded', error: null });
      }
      const after = await c.result(sub.json.request_id);
      expect(after.status).toBe(200);
      expect(after.json).toEqual(before.json);
      expect(await closedHold(gw, acct.accountId, before.json.gateway_request_id)).toMatchObject({ state: 'settled', charge: String(videoCost(1)) });
      expect(await usageNano(gw, acct.accountId)).toBe(usageBefore);
    });
  });

  describe('idempotency', () => {
    it('20 parallel submits with one Idempotency-Key make one job, one hold, one upstream submit', async () => {
      const a = await gw.account(10);
      const m = marker('idem');
      const key = `idem-${mode}-${Date.now()}`;
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          c.submit({ model: 'test/video', prompt: 'once', duration: 4, marker: m, fake: HOLD }, { headers: { 'idempotency-key': key }, key: a.key }),
        ),
      );
      expect(answers.map((r) => r.status)).toEqual(Array(20).fill(202));
      const ids = new Set(answers.map((r) => r.json.request_id));
      expect(ids.size).toBe(1);
      const [id] = [...ids];
      expect(id).toMatch(JOB_ID);
      const holds = await holdsOf(gw, a.accountId);
      expect(holds).toEqual([expect.objectContaining({ state: 'open', amount: String(videoCost(4)) })]);
      expect(await heldNano(gw, a.accountId)).toBe(videoCost(4));
      const list = await c.call('GET', '/v1/jobs', { key: a.key });
      expect(list.json.data.map((r: any) => r.request_id)).toEqual([id]);
      const upstream = await falJobOf(fal, m);
      expect([...fal.jobs.values()].filter((j) => j.input.marker === m)).toHaveLength(1);
      // A later repeat of the same request still answers the same job.
      const later = await c.submit(
        { model: 'test/video', prompt: 'once', duration: 4, marker: m, fake: HOLD },
        { headers: { 'idempotency-key': key }, key: a.key },
      );
      expect(later.json.request_id).toBe(id);
      // The key with another body, or another model, is another request: refused, and no job, hold or upstream submit.
      for (const [other, queue] of [
        [{ model: 'test/video', prompt: 'twice', duration: 4, marker: m, fake: HOLD }, false],
        [{ model: 'test/video-b', prompt: 'once', duration: 4, marker: m, fake: HOLD }, false],
        [{ model: 'test/video', prompt: 'twice', duration: 4, marker: m, fake: HOLD }, true],
      ] as const) {
        const refused = await c.submit(other, { queue, headers: { 'idempotency-key': key }, key: a.key });
        expect(refused.status).toBe(409);
        expect(refused.json.error).toMatchObject({ code: 'duplicate_request', message: expect.stringContaining(id) });
      }
      expect((await c.call('GET', '/v1/jobs', { key: a.key })).json.data.map((r: any) => r.request_id)).toEqual([id]);
      expect(await holdCount(gw, a.accountId)).toBe(1);
      release(upstream);
      await c.untilCompleted(id, 20_000, a.key);
      expect(await closedHold(gw, a.accountId, holds[0].request_id)).toMatchObject({ state: 'settled', charge: String(videoCost(4)) });
      expect(await holdCount(gw, a.accountId)).toBe(1);
    });
  });

  describe('concurrency', () => {
    it('an account at its job_concurrency gets 429 concurrency with Retry-After, until a job ends', async () => {
      const a = await gw.account(10);
      expect((await gw.admin('PATCH', `/admin/v1/accounts/${a.accountId}`, { job_concurrency: 2 })).status).toBe(200);
      const [m1, m2] = [marker('conc'), marker('conc')];
      const one = await c.submit({ model: 'test/video', prompt: '1', duration: 1, marker: m1, fake: HOLD }, { key: a.key });
      const two = await c.submit({ model: 'test/video-b', prompt: '2', duration: 1, marker: m2, fake: HOLD }, { key: a.key });
      expect([one.status, two.status]).toEqual([202, 202]);
      // Both taken upstream (the worker submits after the 202), so the count below sees only what the refusals send.
      const [up1] = await Promise.all([falJobOf(fal, m1), falJobOf(fal, m2)]);
      const holds = await holdCount(gw, a.accountId);
      const submits = () => fal.requests.filter((r) => r.method === 'POST').length;
      const sent = submits();

      const third = await c.submit({ model: 'test/video', prompt: '3', duration: 1, marker: marker('conc') }, { key: a.key });
      expect(third.status).toBe(429);
      expect(third.json.error).toMatchObject({ code: 'rate_limited', request_id: expect.stringMatching(REQ_ID) });
      expect(third.headers.get('x-gateway-limit-type')).toBe('concurrency');
      expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number.isInteger(Number(third.headers.get('retry-after')))).toBe(true);
      // The queue route is the same ceiling.
      expect((await c.submit({ model: 'test/video', prompt: '3' }, { queue: true, key: a.key })).status).toBe(429);
      expect(await holdCount(gw, a.accountId)).toBe(holds);
      expect(submits()).toBe(sent);
      expect((await c.call('GET', '/v1/jobs', { key: a.key })).json.data).toHaveLength(2);

      // One job ends: a submit is taken again.
      release(up1);
      await c.untilCompleted(one.json.request_id, 20_000, a.key);
      const fourth = await c.submit({ model: 'test/video', prompt: '4', duration: 1, marker: marker('conc') }, { key: a.key });
      expect(fourth.status).toBe(202);
      await c.untilCompleted(fourth.json.request_id, 20_000, a.key);
      expect((await c.cancel(two.json.request_id, a.key)).json.outcome).toBe('canceled');
    });
  });

  describe('bounds', () => {
    let b: { accountId: string; key: string; keyId: string };
    beforeAll(async () => {
      b = await gw.account(100);
    });

    it.each([
      ['n 0', 400, 'invalid_request', { model: 'test/video', prompt: 'x', n: 0 }],
      ['n 11', 400, 'invalid_request', { model: 'test/video', prompt: 'x', n: 11 }],
      ['a fractional n', 400, 'invalid_request', { model: 'test/video', prompt: 'x', n: 1.5 }],
      ['duration 0', 400, 'invalid_request', { model: 'test/video', prompt: 'x', duration: 0 }],
      ['a negative duration', 400, 'invalid_request', { model: 'test/video', prompt: 'x', duration: -5 }],
      ['duration 601', 400, 'invalid_request', { model: 'test/video', prompt: 'x', duration: 601 }],
      ['a prompt of 32,001 characters', 400, 'invalid_request', { model: 'test/video', prompt: 'x'.repeat(32_001) }],
      ['an http:// webhook_url', 400, 'invalid_request', { model: 'test/video', prompt: 'x', webhook_url: 'http://example.com/hook' }],
      ['a webhook_url that is no URL', 400, 'invalid_request', { model: 'test/video', prompt: 'x', webhook_url: 'not a url' }],
      ['a text model', 400, 'invalid_request', { model: 'test/chat', prompt: 'x' }],
      ['an unknown model', 409, 'model_unavailable', { model: 'nobody/nothing', prompt: 'x' }],
      ['a coming_soon model', 409, 'model_unavailable', { model: 'test/video-soon', prompt: 'x' }],
    ])('%s → %i %s on both submit routes, leaving no hold and no job', async (_name, status, code, body) => {
      const holds = await holdCount(gw, b.accountId);
      const sent = fal.requests.length;
      for (const queue of [false, true]) {
        const r = await c.submit(body, { queue, key: b.key });
        expect({ queue, status: r.status }).toEqual({ queue, status });
        expect(r.json.error).toMatchObject({ code, request_id: expect.stringMatching(REQ_ID) });
      }
      expect(await holdCount(gw, b.accountId)).toBe(holds);
      expect(fal.requests.length).toBe(sent);
      expect((await c.call('GET', '/v1/jobs', { key: b.key })).json.data).toEqual([]);
    });

    it('the edges of the bounds are taken: n 10, duration 1 and 600, a prompt of 32,000 characters', async () => {
      const ids: string[] = [];
      for (const body of [
        { n: 10, duration: 1 },
        { duration: 600, n: 1 },
        { prompt: 'y'.repeat(32_000), duration: 1 },
      ]) {
        const m = marker('edge');
        const r = await c.submit({ model: 'test/video', prompt: 'edge', fake: HOLD, marker: m, ...body }, { key: b.key });
        expect(r.status).toBe(202);
        ids.push(r.json.request_id);
        await falJobOf(fal, m);
      }
      const holds = await holdsOf(gw, b.accountId);
      expect(holds.map((h) => h.amount)).toEqual([String(videoCost(10)), String(videoCost(600)), String(videoCost(1))]);
      for (const id of ids) expect((await c.cancel(id, b.key)).json.outcome).toBe('canceled');
    });

    it('a submit without a model on /v1/videos → 400; an http:// partner_webhook → 400', async () => {
      const holds = await holdCount(gw, b.accountId);
      const noModel = await c.call('POST', '/v1/videos', { body: { prompt: 'x' }, key: b.key });
      expect(noModel.status).toBe(400);
      expect(noModel.json.error.code).toBe('invalid_request');
      const gen = await c.call('POST', '/v1/videos/generations', { body: { prompt: 'x' }, key: b.key });
      expect(gen.status).toBe(400);
      const partner = await c.submit(
        { model: 'test/video', prompt: 'x' },
        { queue: true, query: `?partner_webhook=${encodeURIComponent('http://example.com/hook')}`, key: b.key },
      );
      expect(partner.status).toBe(400);
      expect(partner.json.error.code).toBe('invalid_request');
      expect(await holdCount(gw, b.accountId)).toBe(holds);
    });

    it('unknown job ids answer 404 model_unavailable on status, result and cancel; 404 not_found on content', async () => {
      for (const id of ['job_aaaaaaaaaaaaaaaaaaaaaaaa', 'job_nope', 'req_aaaaaaaaaaaaaaaaaaaaaaaa']) {
        for (const [method, path] of [
          ['GET', `/v1/queue/requests/${id}/status`],
          ['GET', `/v1/queue/requests/${id}`],
          ['PUT', `/v1/queue/requests/${id}/cancel`],
          ['GET', `/v1/queue/test/video/requests/${id}/status`],
          ['GET', `/v1/videos/${id}`],
        ]) {
          const r = await c.call(method, path, { key: b.key });
          expect({ path, status: r.status, code: r.json?.error?.code }).toEqual({ path, status: 404, code: 'model_unavailable' });
        }
        const content = await c.call('GET', `/v1/videos/${id}/content`, { key: b.key });
        expect({ id, status: content.status, code: content.json?.error?.code }).toEqual({ id, status: 404, code: 'not_found' });
      }
    });

    it("another account's job answers as unknown: 404 model_unavailable, content 404 not_found; its cancel changes nothing", async () => {
      const sub = await c.submit({ model: 'test/video', prompt: 'mine', duration: 1, marker: marker('other') });
      await c.untilCompleted(sub.json.request_id);
      const id = sub.json.request_id;
      for (const [method, path] of [
        ['GET', `/v1/queue/requests/${id}/status`],
        ['GET', `/v1/queue/requests/${id}`],
        ['PUT', `/v1/queue/requests/${id}/cancel`],
        ['GET', `/v1/videos/${id}`],
      ]) {
        const r = await c.call(method, path, { key: b.key });
        expect({ path, status: r.status, code: r.json?.error?.code }).toEqual({ path, status: 404, code: 'model_unavailable' });
      }
      const content = await c.call('GET', `/v1/videos/${id}/content`, { key: b.key });
      expect({ status: content.status, code: content.json?.error?.code }).toEqual({ status: 404, code: 'not_found' });
      expect((await c.call('GET', '/v1/jobs', { key: b.key })).json.data.map((r: any) => r.request_id)).not.toContain(id);
      expect((await c.result(id)).json.outcome).toBe('succeeded');
    });

    it('GET /v1/jobs refuses limit 0 and 201, a bad status, a foreign cursor', async () => {
      for (const q of ['limit=0', 'limit=201', 'limit=-1', 'limit=abc', 'status=done', 'cursor=bm90LWEtY3Vyc29y']) {
        const r = await c.call('GET', `/v1/jobs?${q}`, { key: b.key });
        expect({ q, status: r.status, code: r.json?.error?.code }).toEqual({ q, status: 400, code: 'invalid_request' });
      }
      for (const q of ['limit=1', 'limit=200']) expect((await c.call('GET', `/v1/jobs?${q}`, { key: b.key })).status).toBe(200);
    });

    it('GET /v1/jobs refuses a forged cursor the database cannot read with 400 invalid_request, never a retryable 503', async () => {
      // Each decodes to "<date>|<id>" and passed the old check (Date.parse accepts "1" and the year -271821), then
      // failed in PostgreSQL as 503 upstream_unavailable, which tells clients to retry the same cursor.
      const forged = ['1|job_x', '-271821-04-20T00:00:00Z|job_x', '2026-01-01T00:00:00.000Z|job_\u0000x'].map((raw) =>
        Buffer.from(raw).toString('base64url'),
      );
      const answers = [];
      for (const cursor of forged) {
        const r = await c.call('GET', `/v1/jobs?cursor=${cursor}`, { key: b.key });
        answers.push({ cursor, status: r.status, code: r.json?.error?.code });
      }
      expect(answers).toEqual(forged.map((cursor) => ({ cursor, status: 400, code: 'invalid_request' })));
    });

    it('GET /v1/jobs: newest first, status, model and category filters, keyset pages without repeats', async () => {
      const a = await gw.account(10);
      const ids: string[] = [];
      const held = marker('list-held');
      const plan: Array<Record<string, unknown>> = [
        { model: 'test/video', prompt: '1' },
        { model: 'test/video-b', prompt: '2' },
        { model: 'test/video-reject', prompt: '3' },
        { model: 'test/video', prompt: '4' },
        { model: 'test/video-b', prompt: '5' },
        { model: 'test/video', prompt: '6', fake: HOLD, marker: held },
      ];
      for (const body of plan) {
        const r = await c.submit({ duration: 1, ...body }, { key: a.key });
        expect(r.status).toBe(202);
        ids.push(r.json.request_id);
      }
      for (const id of ids.slice(0, -1)) await c.untilCompleted(id, 20_000, a.key);
      const newestFirst = [...ids].reverse();

      const all = await c.call('GET', '/v1/jobs', { key: a.key });
      expect(all.json).toMatchObject({ has_more: false, next_cursor: null });
      expect(all.json.data.map((r: any) => r.request_id)).toEqual(newestFirst);
      for (const row of all.json.data) {
        expect(Object.keys(row).sort()).toEqual(
          [
            'request_id',
            'model',
            'category',
            'status',
            'outcome',
            'queue_position',
            'gateway_request_id',
            'cost',
            'error_code',
            'created_at',
            'started_at',
            'completed_at',
          ].sort(),
        );
      }

      const paged: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const r: any = await c.call('GET', `/v1/jobs?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { key: a.key });
        expect(r.status).toBe(200);
        expect(r.json.data.length).toBeLessThanOrEqual(2);
        paged.push(...r.json.data.map((row: any) => row.request_id));
        cursor = r.json.next_cursor;
        expect(r.json.has_more).toBe(cursor !== null);
        pages++;
      } while (cursor && pages < 10);
      expect(paged).toEqual(newestFirst);
      expect(pages).toBe(3);

      const ofStatus = async (s: string) => (await c.call('GET', `/v1/jobs?status=${s}`, { key: a.key })).json.data.map((r: any) => r.request_id);
      expect(await ofStatus('failed')).toEqual([ids[2]]);
      expect(await ofStatus('succeeded')).toEqual([ids[4], ids[3], ids[1], ids[0]]);
      expect(await ofStatus('canceled')).toEqual([]);
      const queuedOrRunning = [...(await ofStatus('queued')), ...(await ofStatus('running'))];
      expect(queuedOrRunning).toEqual([ids[5]]);
      const ofModel = async (m: string) => (await c.call('GET', `/v1/jobs?model=${m}`, { key: a.key })).json.data.map((r: any) => r.request_id);
      expect(await ofModel('test/video-b')).toEqual([ids[4], ids[1]]);
      expect(await ofModel('test/video')).toEqual([ids[5], ids[3], ids[0]]);
      expect((await c.call('GET', '/v1/jobs?category=text', { key: a.key })).json.data).toEqual([]);
      expect((await c.call('GET', '/v1/jobs?category=video&limit=200', { key: a.key })).json.data).toHaveLength(6);
      const open = (await c.call('GET', `/v1/jobs?model=test/video&limit=1`, { key: a.key })).json.data[0];
      expect(open).toMatchObject({ request_id: ids[5], outcome: null, cost: null, completed_at: null });

      expect((await c.cancel(ids[5], a.key)).json.outcome).toBe('canceled');
      await falJobOf(fal, held);
    });
  });
});
