import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { closedHold, useGatewaySuite, type Mode, type TestGateway } from './support/harness';

/**
 * What the public listener answers on paths that are not a route's happy path, as a new user meets them: public
 * paths by the service table, unknown paths, the probes and metrics (never here), oversized bodies, and chat
 * parameters passed through for the upstream to judge.
 */
const config = (fake: FakeUpstream) => ({
  providers: [{ id: 'fake', kind: 'openai', base_url: fake.url, timeout_ms: 5_000 }],
  models: [
    {
      id: 'pub/chat',
      name: 'Chat',
      category: 'text',
      status: 'available',
      context_length: 4096,
      max_output_tokens: 20,
      pricing: { prompt: '0.001', completion: '0.002' },
      endpoints: [{ provider: 'fake', model: 'ok' }],
    },
  ],
  limits: { max_request_body: '64kb' },
});

const REQUEST_ID = /^req_[a-z0-9]{24}$/;

describe.each(['embedded', 'fleet'] as Mode[])('the public listener of the %s gateway', (mode) => {
  let fake: FakeUpstream;
  let url: string;
  let key: string;
  let accountId: string;
  let metricsUrl: (service: 'edge' | 'text') => string;
  let ledger: (sql: string, params?: unknown[]) => Promise<any[]>;
  let gw: TestGateway;
  useGatewaySuite(mode, { upstreams: startFakeOpenAI, config, credits: 5 }, (s) => {
    fake = s.upstreams;
    url = s.gw.url;
    key = s.acct.key;
    accountId = s.acct.accountId;
    metricsUrl = s.gw.metricsUrl;
    ledger = s.gw.ledger;
    gw = s.gw;
  });

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const r = await fetch(`${url}${path}`, { headers });
    const text = await r.text();
    return { status: r.status, headers: r.headers, text, json: text.startsWith('{') ? JSON.parse(text) : undefined };
  };
  const expectNotFound = (r: Awaited<ReturnType<typeof get>>) => {
    expect(r.status).toBe(404);
    expect(r.json.error).toMatchObject({ code: 'not_found' });
    expect(r.json.error.request_id).toMatch(REQUEST_ID);
    expect(r.headers.get('x-gateway-request-id')).toBe(r.json.error.request_id);
  };

  it('/v1/catalog is public by the service table: it answers without a key', async () => {
    const r = await get('/v1/catalog');
    expect(r.status).toBe(200);
    expect(r.json.data.map((i: { id: string }) => i.id)).toEqual(['pub/chat']);
  });

  it.each(['/v1/stats', '/v1/status'])('%s is public by the service table: it answers without a key', async (path) => {
    const r = await get(path);
    expect(r.status).toBe(200);
    expect(r.json.generatedAt).toEqual(expect.any(String));
  });

  it('an unknown /v1 path answers 404 in the envelope without a key, with a valid key and with a wrong one', async () => {
    expectNotFound(await get('/v1/nothing-here'));
    expectNotFound(await get('/v1/nothing-here', { authorization: `Bearer ${key}` }));
    expectNotFound(await get('/v1/nothing-here', { authorization: 'Bearer sk_live_wrong' }));
    expectNotFound(await get('/v1/chat'));
  });

  it('routes /v1/files to the media service: an unknown file is 404 not_found with a key, 401 without', async () => {
    expectNotFound(await get('/v1/files/file_000000000000000000000000', { authorization: `Bearer ${key}` }));
    expect((await get('/v1/files/file_000000000000000000000000')).status).toBe(401);
  });

  it('a public path asked with another method is unknown too, not unauthorised', async () => {
    const r = await fetch(`${url}/v1/models`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(r.status).toBe(404);
    expect((await r.json()).error.code).toBe('not_found');
  });

  it.each(['/metrics', '/healthz', '/readyz'])('%s is not served on the public listener', async (path) => {
    expectNotFound(await get(path));
  });

  it('probes and metrics answer on the metrics listener instead', async () => {
    expect((await fetch(`${metricsUrl('edge')}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${metricsUrl('edge')}/readyz`)).json()).toMatchObject({ status: 'ready' });
    expect(await (await fetch(`${metricsUrl('edge')}/metrics`)).text()).toMatch(/gateway_http_request_duration_seconds_count\{service="edge"/);
    // Upstream attempts are counted where the upstream is called: the text service (the one process, embedded).
    const chat = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'pub/chat', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(chat.status).toBe(200);
    expect(await (await fetch(`${metricsUrl('text')}/metrics`)).text()).toMatch(
      /gateway_upstream_attempts_total\{endpoint="fake\/ok",outcome="ok"\} [1-9]/,
    );
  });

  it('a body over limits.max_request_body answers 413 invalid_request in the envelope, and holds nothing', async () => {
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'pub/chat', messages: [{ role: 'user', content: 'x'.repeat(70 * 1024) }] }),
    });
    expect(r.status).toBe(413);
    const body = await r.json();
    expect(body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/too large/) });
    expect(body.error.request_id).toBe(r.headers.get('x-gateway-request-id'));
    const [holds] = await ledger('SELECT count(*)::int AS n FROM holds WHERE request_id = $1', [body.error.request_id]);
    expect(holds.n).toBe(0);
    const [acct] = await ledger('SELECT held::text AS held FROM accounts WHERE id = $1', [accountId]);
    expect(acct.held).toBe('0');
  });

  it('chat sampling parameters reach the upstream unchanged, whatever their value', async () => {
    const sent = { temperature: 3.5, top_p: 1.5, n: 2, presence_penalty: -2 };
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'pub/chat', messages: [{ role: 'user', content: 'params' }], ...sent }),
    });
    expect(r.status).toBe(200);
    const received = fake.requests.find((q) => q.body.messages?.[0]?.content === 'params');
    expect(received?.body).toMatchObject(sent);
  });

  it('n choices hold n times the output worst case', async () => {
    const holdFor = async (n: number) => {
      const r = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'pub/chat', messages: [{ role: 'user', content: 'same prompt' }], n }),
      });
      expect(r.status).toBe(200);
      return BigInt((await closedHold(gw, accountId, r.headers.get('x-gateway-request-id'))).amount);
    };
    // max_output_tokens 20 at 0.002 USD each: 0.04 USD, 40,000,000 nano-USD per extra choice.
    expect((await holdFor(3)) - (await holdFor(1))).toBe(2n * 40_000_000n);
  });
});
