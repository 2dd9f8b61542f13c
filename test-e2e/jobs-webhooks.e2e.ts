import { verifyWebhook } from '@gateway/jobs';
import { waitFor, type HttpsReceiver, type ReceivedRequest, requireTrustedTestCert, startHttpsReceiver } from '@gateway/testing';
import { type FakeFal, startFakeFal } from './support/fake-fal';
import { holdCount, type Mode, type TestGateway, useGatewaySuite, REPLICATED_FLEET } from './support/harness';
import { FAL_KEY_ENV, falJobOf, HOLD, type JobsClient, jobsClient, jobsConfig, REQ_ID } from './support/jobs';

const modes: Mode[] = ['embedded', REPLICATED_FLEET];
/**
 * Retries wait initial_backoff_ms × 2^(retry-1) ± 20 %: from 1250 ms the first retry comes at least one second after
 * the first attempt, so each attempt's unix-second timestamp differs from the one before.
 */
const INITIAL_BACKOFF_MS = 1250;

describe.each(modes)('job webhooks through the %s gateway', (mode) => {
  let fal: FakeFal;
  let receiver: HttpsReceiver;
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let c: JobsClient;
  let secret: string;
  let seq = 0;
  const marker = (what: string) => `${mode}-wh-${what}-${++seq}`;
  /** Every job id a delivery was expected for, to check at the end that each got exactly one delivery id. */
  const expected = new Map<string, HttpsReceiver>();

  beforeAll(() => requireTrustedTestCert());

  useGatewaySuite(
    mode,
    {
      upstreams: async () => {
        const f = await startFakeFal();
        process.env[FAL_KEY_ENV] = f.key;
        return [f, await startHttpsReceiver()] as [FakeFal, HttpsReceiver];
      },
      config: ([f]) => jobsConfig(f.url, { webhooks: { initial_backoff_ms: INITIAL_BACKOFF_MS, max_retries: 3 } }),
      credits: 50,
    },
    (s) => {
      ({ gw, acct } = s);
      [fal, receiver] = s.upstreams;
      c = jobsClient(
        () => gw.url,
        () => acct.key,
      );
    },
  );

  beforeAll(async () => {
    // The account's secret, learnt the only way an operator can: rotating it.
    const r = await gw.admin('POST', `/admin/v1/accounts/${acct.accountId}/webhook-secret`);
    expect(r.status).toBe(200);
    secret = r.json.data.secret;
    expect(typeof secret).toBe('string');
  });

  const deliveriesTo = (rx: HttpsReceiver, path: string) => rx.received.filter((r) => r.url === path);
  const firstDelivery = async (rx: HttpsReceiver, path: string, timeoutMs = 15_000): Promise<ReceivedRequest> => {
    await waitFor(() => deliveriesTo(rx, path).length > 0, `a delivery to ${path}`, timeoutMs);
    return deliveriesTo(rx, path)[0];
  };

  /** The contract's headers, a signature that verifies over the raw bytes (and not over re-serialised JSON). */
  const expectSigned = (d: ReceivedRequest) => {
    expect(d.method).toBe('POST');
    expect(d.headers['content-type']).toBe('application/json');
    expect(d.headers['x-gateway-webhook-id']).toMatch(/^\S+$/);
    expect(d.headers['x-gateway-webhook-timestamp']).toMatch(/^\d+$/);
    expect(d.headers['x-gateway-webhook-signature']).toMatch(/^v1=[0-9a-f]{64}$/);
    // The attempt's own send time: within the receiver's tolerance of when it arrived.
    expect(Math.abs(Number(d.headers['x-gateway-webhook-timestamp']) - d.at / 1000)).toBeLessThan(5);
    expect(verifyWebhook(secret, d.headers, d.body, { now: d.at })).toMatchObject({ ok: true, id: d.headers['x-gateway-webhook-id'] });
    const reserialised = JSON.stringify(JSON.parse(d.body.toString()), null, 1);
    expect(verifyWebhook(secret, d.headers, reserialised, { now: d.at })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhook('not-the-secret', d.headers, d.body, { now: d.at })).toEqual({ ok: false, reason: 'bad_signature' });
  };

  it('a succeeded job: one delivery with the contract body (payload as the result route returns it) and signed headers', async () => {
    const path = `/hook/${marker('ok')}`;
    const sub = await c.submit({ model: 'test/video', prompt: 'hook', duration: 2, webhook_url: `${receiver.url}${path}` });
    expect(sub.status).toBe(202);
    expected.set(sub.json.request_id, receiver);
    const d = await firstDelivery(receiver, path);
    expectSigned(d);
    const result = await c.result(sub.json.request_id);
    expect(result.status).toBe(200);
    // The body: exactly the contract's fields, in its order.
    expect(Object.keys(JSON.parse(d.body.toString()))).toEqual(['request_id', 'gateway_request_id', 'status', 'outcome', 'payload', 'error']);
    expect(JSON.parse(d.body.toString())).toEqual({
      request_id: sub.json.request_id,
      gateway_request_id: result.json.gateway_request_id,
      status: 'COMPLETED',
      outcome: 'succeeded',
      payload: result.json.payload,
      error: null,
    });
  });

  it('a failed job: one delivery with outcome failed, payload null and the error', async () => {
    const path = `/hook/${marker('failed')}`;
    const sub = await c.submit({ model: 'test/video-reject', prompt: 'hook', duration: 2, webhook_url: `${receiver.url}${path}` });
    expected.set(sub.json.request_id, receiver);
    const d = await firstDelivery(receiver, path);
    expectSigned(d);
    expect(JSON.parse(d.body.toString())).toEqual({
      request_id: sub.json.request_id,
      gateway_request_id: expect.stringMatching(REQ_ID),
      status: 'COMPLETED',
      outcome: 'failed',
      payload: null,
      error: { code: 'invalid_request', message: expect.any(String) },
    });
    expect((await c.result(sub.json.request_id)).status).toBe(400);
  });

  it('a cancelled job: one delivery with outcome canceled; a cancel after it sends no other', async () => {
    const m = marker('canceled');
    const path = `/hook/${m}`;
    const sub = await c.submit({ model: 'test/video', prompt: 'hook', duration: 2, fake: HOLD, marker: m, webhook_url: `${receiver.url}${path}` });
    expected.set(sub.json.request_id, receiver);
    await falJobOf(fal, m);
    expect((await c.cancel(sub.json.request_id)).json.outcome).toBe('canceled');
    const d = await firstDelivery(receiver, path);
    expectSigned(d);
    expect(JSON.parse(d.body.toString())).toEqual({
      request_id: sub.json.request_id,
      gateway_request_id: expect.stringMatching(REQ_ID),
      status: 'COMPLETED',
      outcome: 'canceled',
      payload: null,
      error: { code: 'canceled', message: expect.any(String) },
    });
    expect((await c.cancel(sub.json.request_id)).status).toBe(200);
  });

  it('a receiver answering 500 twice then 204 gets three attempts: one id, each with its own timestamp and signature', async () => {
    // A receiver of its own, so no other delivery takes its scripted answers; closed by the last test.
    const own = await startHttpsReceiver();
    own.reply(500, 500);
    const path = `/hook/${marker('retry')}`;
    const sub = await c.submit({ model: 'test/video', prompt: 'retry', duration: 1, webhook_url: `${own.url}${path}` });
    expected.set(sub.json.request_id, own);
    await waitFor(() => deliveriesTo(own, path).length >= 3, 'three attempts', 20_000);
    const attempts = deliveriesTo(own, path);
    const ids = new Set(attempts.map((a) => a.headers['x-gateway-webhook-id']));
    expect(ids.size).toBe(1);
    const stamps = attempts.map((a) => Number(a.headers['x-gateway-webhook-timestamp']));
    expect(new Set(stamps).size).toBe(3);
    expect([...stamps].sort((x, y) => x - y)).toEqual(stamps);
    for (const a of attempts) expectSigned(a);
    // The same bytes every time; only the timestamp and so the signature change.
    expect(new Set(attempts.map((a) => a.body.toString())).size).toBe(1);
    expect(new Set(attempts.map((a) => a.headers['x-gateway-webhook-signature'])).size).toBe(3);
    // The 204 ended it: no fourth attempt comes (checked in the last test, after later deliveries arrived).
  });

  it('partner_webhook (percent-encoded) is an alias of webhook_url; the body field wins when both are sent', async () => {
    const alias = `/hook/${marker('alias')}?x=1&y=2`;
    const sub = await c.submit(
      { model: 'test/video', prompt: 'alias', duration: 1 },
      { queue: true, query: `?partner_webhook=${encodeURIComponent(`${receiver.url}${alias}`)}` },
    );
    expect(sub.status).toBe(200);
    expected.set(sub.json.request_id, receiver);
    const d = await firstDelivery(receiver, alias);
    expectSigned(d);
    expect(JSON.parse(d.body.toString())).toMatchObject({ request_id: sub.json.request_id, outcome: 'succeeded' });

    const body = `/hook/${marker('body-wins')}`;
    const both = await c.submit(
      { model: 'test/video', prompt: 'both', duration: 1, webhook_url: `${receiver.url}${body}` },
      { queue: true, query: `?partner_webhook=${encodeURIComponent(`${receiver.url}/hook/never`)}` },
    );
    expected.set(both.json.request_id, receiver);
    expect(JSON.parse((await firstDelivery(receiver, body)).body.toString())).toMatchObject({ request_id: both.json.request_id });
    expect(deliveriesTo(receiver, '/hook/never')).toEqual([]);
  });

  it('an http:// webhook_url is refused at submit with 400, on either field; nothing held, nothing sent upstream', async () => {
    const holds = await holdCount(gw, acct.accountId);
    const sent = fal.requests.length;
    const plain = receiver.url.replace('https:', 'http:');
    const viaBody = await c.submit({ model: 'test/video', prompt: 'x', webhook_url: `${plain}/hook` });
    const viaQuery = await c.submit(
      { model: 'test/video', prompt: 'x' },
      { queue: true, query: `?partner_webhook=${encodeURIComponent(`${plain}/hook`)}` },
    );
    for (const r of [viaBody, viaQuery]) {
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({ code: 'invalid_request', request_id: expect.stringMatching(REQ_ID) });
    }
    expect(await holdCount(gw, acct.accountId)).toBe(holds);
    expect(fal.requests.length).toBe(sent);
  });

  it('every job got exactly one delivery (one id), and a delivered one is not sent again', async () => {
    // A last job's delivery arrives after every earlier one was finished with: the dispatcher sends in order of due time.
    const path = `/hook/${marker('last')}`;
    const sub = await c.submit({ model: 'test/video', prompt: 'last', duration: 1, webhook_url: `${receiver.url}${path}` });
    await firstDelivery(receiver, path);
    expected.set(sub.json.request_id, receiver);
    const receivers = new Set(expected.values());
    const idsByJob = new Map<string, Set<string>>();
    for (const rx of receivers)
      for (const d of rx.received) {
        const job = JSON.parse(d.body.toString()).request_id;
        if (!idsByJob.has(job)) idsByJob.set(job, new Set());
        idsByJob.get(job)!.add(String(d.headers['x-gateway-webhook-id']));
      }
    for (const job of expected.keys()) expect({ job, ids: idsByJob.get(job)?.size }).toEqual({ job, ids: 1 });
    // Delivered at the first attempt (a 204): each of those ids came once; the retried one came three times, no more.
    const counts = [...receivers].flatMap((rx) => rx.received.map((d) => String(d.headers['x-gateway-webhook-id'])));
    const perId = new Map<string, number>();
    for (const id of counts) perId.set(id, (perId.get(id) ?? 0) + 1);
    expect([...perId.values()].sort()).toEqual([...Array(expected.size - 1).fill(1), 3]);
    await Promise.all([...receivers].filter((rx) => rx !== receiver).map((rx) => rx.close()));
  });
});
