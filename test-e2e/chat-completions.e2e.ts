import OpenAI from 'openai';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { TEXT_PRICE, testConfig } from './support/config';
import { textCost } from './support/money';
import { inFreshWindowIfNeeded } from './support/rate-window';
import {
  closedHold,
  expectChargedForDelivered,
  expectReleased,
  holdCount,
  ledgerRow,
  settled,
  usageRecord,
  type Mode,
  type TestGateway,
  useGatewaySuite,
  isFleet,
  isReplicated,
  REPLICATED_FLEET,
} from './support/harness';

const modes: Mode[] = ['embedded', REPLICATED_FLEET];

describe.each(modes)('chat completions through the %s gateway', (mode) => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let client: OpenAI;

  useGatewaySuite(mode, { upstreams: startFakeOpenAI, config: (f) => testConfig(f.url), credits: 50 }, (s) => {
    ({ upstreams: fake, gw, acct } = s);
    client = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });

  const call = (body: unknown, key = acct.key, headers: Record<string, string> = {}, base = gw.url) =>
    fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const ping = { model: 'test/ok', messages: [{ role: 'user', content: 'ping' }] };

  if (isReplicated(mode))
    it('runs two processes of every service, and its calls, streamed or not, reach both text replicas', async () => {
      expect(gw.fleet!.replicas).toEqual({ edge: 2, billing: 2, text: 2, media: 2, jobs: 2, catalogue: 2, mcp: 2 });
      // An account of its own: the tests below read the suite's account from its first charge.
      const own = await gw.account(1);
      const streamed = { ...ping, stream: true };
      const answers = await Promise.all(
        [ping, streamed, ping, streamed].map(async (body) => {
          const r = await call(body, own.key);
          return { status: r.status, body: await r.text() };
        }),
      );
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
      expect(answers[1].body).toContain('data: [DONE]');
      const served = await Promise.all(
        ['text', 'text-2'].map(async (name) => (await (await fetch(`${gw.fleet!.metricsUrls[name]}/metrics`)).text()).includes('outcome="ok"')),
      );
      expect(served).toEqual([true, true]);
    });

  it('answers the openai client, charges exactly, and shows the charge in /v1/credits and /v1/generation', async () => {
    const { data, response } = await client.chat.completions
      .create({ model: 'test/ok', messages: [{ role: 'user', content: 'ping' }] })
      .withResponse();
    expect(data.choices[0].message.content).toBe('pong');
    expect(data.model).toBe('test/ok');
    expect((data.usage as any).cost).toBe('0.005');
    const requestId = response.headers.get('x-gateway-request-id')!;
    expect(requestId).toMatch(/^req_[a-z0-9]{24}$/);
    expect(response.headers.get('x-ratelimit-limit')).toBe('600');
    await settled(gw, acct.accountId);

    const gen = await (await fetch(`${gw.url}/v1/generation?id=${requestId}`, { headers: { authorization: `Bearer ${acct.key}` } })).json();
    expect(gen.data).toMatchObject({
      id: requestId,
      request_id: requestId,
      model: 'test/ok',
      streamed: false,
      status: 'succeeded',
      error_code: null,
      tokens_prompt: 3,
      tokens_completion: 1,
      total_cost: 0.01,
      cost: '0.005',
      attempts: 1,
      fallback_used: false,
      finish_reason: 'stop',
    });
    expect(typeof gen.data.latency).toBe('number');
    expect(typeof gen.data.generation_time).toBe('number');

    const credits = await (await fetch(`${gw.url}/v1/credits`, { headers: { 'x-api-key': acct.key } })).json();
    // Each figure is rounded on its own from the exact amounts: usage 0.005 → 0.01, balance 49.995 → 50.
    expect(credits.data).toEqual({ total_credits: 50, total_usage: 0.01, balance: 50, held: 0, available: 50, credit_limit: 0, currency: 'USD' });
    const [row] = await gw.ledger(`SELECT total_usage::text AS u FROM accounts WHERE id = $1`, [acct.accountId]);
    expect(row.u).toBe('5000000'); // 0.005 USD in nano-USD, exactly
  });

  it('streams through the openai client and settles the reported usage', async () => {
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'test/words', messages: [{ role: 'user', content: 'count' }], stream: true })
      .withResponse();
    let text = '';
    let usage: any;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
      expect(chunk.model).toBe('test/words');
    }
    expect(text.split(' ')).toHaveLength(20);
    expect(usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 20, cost: '0.045' });
    // The ledger took what the upstream reported (5 prompt, 20 completion tokens), not the hold's worst case.
    const requestId = response.headers.get('x-gateway-request-id');
    const charge = textCost(TEXT_PRICE, 5, 20).toString();
    expect(await closedHold(gw, acct.accountId, requestId)).toMatchObject({ state: 'settled', charge });
    expect(await usageRecord(gw, acct.accountId, requestId)).toMatchObject({
      status: 'succeeded',
      tokens_prompt: 5,
      tokens_completion: 20,
      cost: charge,
    });
  });

  const weatherTool = {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      description: 'Weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  };

  it('passes tools through and returns tool_calls to the openai client', async () => {
    const res = await client.chat.completions.create({
      model: 'test/tools',
      messages: [{ role: 'user', content: 'weather in Paris?' }],
      tools: [weatherTool],
      tool_choice: 'auto',
    });
    expect(res.choices[0].finish_reason).toBe('tool_calls');
    expect(res.choices[0].message.tool_calls).toEqual([
      { id: 'call_fake1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
    const sent = fake.requests[fake.requests.length - 1].body;
    expect(sent.tools).toEqual([weatherTool]);
    expect(sent.tool_choice).toBe('auto');
    await settled(gw, acct.accountId);
  });

  it('streams tool_calls deltas the openai client accumulates', async () => {
    const stream = client.chat.completions.stream({ model: 'test/tools', messages: [{ role: 'user', content: 'weather?' }], tools: [weatherTool] });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0].message.tool_calls?.[0]).toMatchObject({
      id: 'call_fake1',
      function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
    });
    expect(final.choices[0].finish_reason).toBe('tool_calls');
    await settled(gw, acct.accountId);
  });

  it('sends a tool result back upstream in the chat shape', async () => {
    const res = await client.chat.completions.create({
      model: 'test/echo',
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '18C' },
      ],
      tools: [weatherTool],
    });
    const echoed = JSON.parse(res.choices[0].message.content!);
    expect(echoed[2]).toEqual({ role: 'tool', tool_call_id: 'call_1', content: '18C' });
    await settled(gw, acct.accountId);
  });

  it('forwards unknown fields upstream and never the gateway-only ones', async () => {
    const r = await call({
      model: 'test/ok',
      messages: [{ role: 'user', content: 'hi' }],
      seed: 42,
      logit_bias: { '50256': -100 },
      models: ['test/sim'],
    });
    expect(r.status).toBe(200);
    const sent = fake.requests[fake.requests.length - 1].body;
    expect(sent).toMatchObject({ model: 'ok', seed: 42, logit_bias: { '50256': -100 } });
    expect(sent.models).toBeUndefined();
    await settled(gw, acct.accountId);
  });

  it.each([
    ['a 5xx', 'test/failover'],
    ['a refused connection', 'test/dead-first'],
    ['no response head within timeout_ms', 'test/slow-first'],
  ])('fails over on %s and records the attempts', async (_why, model) => {
    const r = await call({ model, messages: [{ role: 'user', content: 'ping' }] });
    expect(r.status).toBe(200);
    const id = r.headers.get('x-gateway-request-id');
    await settled(gw, acct.accountId);
    const gen = await (await fetch(`${gw.url}/v1/generation?id=${id}`, { headers: { authorization: `Bearer ${acct.key}` } })).json();
    expect(gen.data).toMatchObject({ attempts: 2, fallback_used: true, status: 'succeeded' });
  });

  it('counts upstream attempts, closed holds and charges in Prometheus metrics', async () => {
    expect((await call({ model: 'test/failover', messages: [{ role: 'user', content: 'ping' }] })).status).toBe(200);
    await settled(gw, acct.accountId);
    // Each process serves its own figures on its metrics listener, read from every replica of the service (the call
    // counts on whichever served it); embedded, both names are the one process.
    const text = await gw.scrape('text');
    const edge = await gw.scrape('edge');
    expect(text).toMatch(/gateway_upstream_attempts_total\{endpoint="fake\/status-500",outcome="status"\} [1-9]/);
    expect(text).toMatch(/gateway_upstream_attempts_total\{endpoint="fake\/ok",outcome="ok"\} [1-9]/);
    expect(text).toMatch(/gateway_holds_closed_total\{outcome="settle",status="succeeded"\} [1-9]/);
    expect(text).toMatch(/gateway_charged_usd_total\{model="test\/failover"\} 0\.\d+/);
    expect(edge).toMatch(/gateway_http_request_duration_seconds_count\{service="edge",route="text",status="200"\} [1-9]/);
  });

  it('tries the models array in turn when the first model is not servable', async () => {
    const r = await call({ model: 'test/soon', models: ['test/ok'], messages: [{ role: 'user', content: 'ping' }] });
    expect(r.status).toBe(200);
    expect((await r.json()).model).toBe('test/ok');
    await settled(gw, acct.accountId);
  });

  it('fails over from every endpoint of the first model to the next model in `models`, charging only the answering one', async () => {
    const sent = fake.requests.length;
    const r = await call({ ...ping, model: 'test/first-model-fails', models: ['test/ok'] });
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({ model: 'test/ok', choices: [{ message: { content: 'pong' } }], usage: { cost: '0.005' } });
    expect(fake.requests.slice(sent).map((q) => q.model)).toEqual(['status-502', 'status-504', 'ok']);
    const requestId = r.headers.get('x-gateway-request-id');
    expect(await closedHold(gw, acct.accountId, requestId)).toMatchObject({ state: 'settled', charge: textCost(TEXT_PRICE, 3, 1).toString() });
    expect(await usageRecord(gw, acct.accountId, requestId)).toMatchObject({
      model: 'test/ok',
      status: 'succeeded',
      attempts: 3,
      fallback_used: true,
    });
  });

  it('answers 409 model_unavailable, holding nothing and calling nobody, once every endpoint of the model has its circuit open', async () => {
    // Each call fails on both endpoints, so the circuits open together after as many calls as failures they allow.
    const answers: Array<{ status: number; upstreamCalls: number; error: { code: string; message: string; request_id: string } }> = [];
    while (answers.length < 20 && answers[answers.length - 1]?.status !== 409) {
      const sent = fake.requests.length;
      const r = await call({ ...ping, model: 'test/unhealthy' });
      answers.push({ status: r.status, upstreamCalls: fake.requests.length - sent, error: (await r.json()).error });
    }
    const failed = answers.slice(0, -1);
    const refused = answers[answers.length - 1];
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.map((a) => [a.status, a.error.code, a.upstreamCalls])).toEqual(failed.map(() => [503, 'upstream_unavailable', 2]));
    expect(refused).toMatchObject({ status: 409, upstreamCalls: 0, error: { code: 'model_unavailable', message: expect.stringMatching(/healthy/) } });
    expect(await gw.ledger(`SELECT id FROM holds WHERE request_id = $1`, [refused.error.request_id])).toEqual([]);
    for (const a of failed) await expectReleased(gw, acct.accountId, a.error.request_id, 'upstream_unavailable');
  });

  it('answers 503 upstream_unavailable when every endpoint fails, and charges nothing', async () => {
    const before = await gw.ledger(`SELECT total_usage::text AS u FROM accounts WHERE id = $1`, [acct.accountId]);
    const r = await call({ model: 'test/all-fail', messages: [{ role: 'user', content: 'ping' }] });
    expect(r.status).toBe(503);
    const body = await r.json();
    expect(body.error.code).toBe('upstream_unavailable');
    expect(body.error.request_id).toMatch(/^req_/);
    await settled(gw, acct.accountId);
    const after = await gw.ledger(`SELECT total_usage::text AS u FROM accounts WHERE id = $1`, [acct.accountId]);
    expect(after).toEqual(before);
    const [rec] = await gw.ledger(`SELECT status, error_code, total_cost::text AS c FROM usage_records WHERE request_id = $1`, [
      body.error.request_id,
    ]);
    expect(rec).toEqual({ status: 'failed', error_code: 'upstream_unavailable', c: '0' });
  });

  it("does not fail over on the client's own 4xx", async () => {
    const n = fake.requests.length;
    const r = await call({ model: 'test/client-error', messages: [{ role: 'user', content: 'ping' }] });
    expect(r.status).toBe(400);
    expect((await r.json()).error.code).toBe('invalid_request');
    expect(fake.requests.length - n).toBe(1);
    await settled(gw, acct.accountId);
  });

  /** A stream cut after its first byte: what the client was sent before the error frame, and that frame's error. */
  const brokenStream = async (r: Response) => {
    expect(r.status).toBe(200);
    const frames = (await r.text())
      .split('\n\n')
      .filter(Boolean)
      .map((f) => f.replace(/^data: /, ''));
    expect(frames[frames.length - 1]).toBe('[DONE]');
    const delivered = frames
      .slice(0, -2)
      .map((f) => JSON.parse(f).choices[0]?.delta?.content ?? '')
      .join('');
    return { delivered, error: JSON.parse(frames[frames.length - 2]).error };
  };

  it('ends a stream broken mid-way with an error frame and [DONE], charging only delivered tokens', async () => {
    const r = await call({ model: 'test/break', messages: [{ role: 'user', content: 'ping' }], stream: true });
    const requestId = r.headers.get('x-gateway-request-id');
    const { delivered, error } = await brokenStream(r);
    expect(error).toMatchObject({ code: 'upstream_unavailable', request_id: requestId });
    expect(delivered).toBe('part0 part1 part2 ');
    await expectChargedForDelivered(gw, acct.accountId, requestId, { prompt: 'ping', delivered, price: TEXT_PRICE });
  });

  it('releases the hold of a stream that breaks before its first token, charging nothing', async () => {
    const r = await call({ model: 'test/break-at-once', messages: [{ role: 'user', content: 'ping' }], stream: true });
    const requestId = r.headers.get('x-gateway-request-id');
    const { delivered, error } = await brokenStream(r);
    expect(error).toMatchObject({ code: 'upstream_unavailable', request_id: requestId });
    expect(delivered).toBe('');
    await expectReleased(gw, acct.accountId, requestId, 'upstream_unavailable');
  });

  it('charges a client that leaves mid-stream for the prompt and the tokens sent before it left, recorded as failed', async () => {
    const controller = new AbortController();
    const r = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      signal: controller.signal,
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/trickle', messages: [{ role: 'user', content: 'count slowly' }], stream: true }),
    });
    expect(r.status).toBe(200);
    const requestId = r.headers.get('x-gateway-request-id');
    // Leave as soon as the first word is in: the upstream sends the next one only two seconds later.
    const reader = r.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (!received.includes('"content":"w1"')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended before its first word: ${received}`);
      received += decoder.decode(value, { stream: true });
    }
    controller.abort();
    await reader.cancel().catch(() => undefined);
    await expectChargedForDelivered(gw, acct.accountId, requestId, { prompt: 'count slowly', delivered: 'w1', price: TEXT_PRICE });
  });

  it('caps a charge at the hold when the upstream over-reports', async () => {
    const r = await call({ model: 'test/overreport', messages: [{ role: 'user', content: 'ping' }], max_tokens: 5 });
    expect(r.status).toBe(200);
    const body = await r.json();
    const [hold] = await gw.ledger(`SELECT amount::text AS a FROM holds WHERE request_id = $1`, [r.headers.get('x-gateway-request-id')]);
    await settled(gw, acct.accountId);
    const [h2] = await gw.ledger(`SELECT charge::text AS c FROM holds WHERE request_id = $1`, [r.headers.get('x-gateway-request-id')]);
    expect(h2.c).toBe(hold.a);
    expect(body.usage.cost).toBe((Number(hold.a) / 1e9).toString());
  });

  describe('bad input changes nothing', () => {
    it.each([
      ['no model', { messages: [{ role: 'user', content: 'x' }] }, 400, 'invalid_request'],
      ['no messages', { model: 'test/ok' }, 400, 'invalid_request'],
      ['empty messages', { model: 'test/ok', messages: [] }, 400, 'invalid_request'],
      ['an unknown role', { model: 'test/ok', messages: [{ role: 'wizard', content: 'x' }] }, 400, 'invalid_request'],
      ['a negative max_tokens', { model: 'test/ok', messages: [{ role: 'user', content: 'x' }], max_tokens: -1 }, 400, 'invalid_request'],
      ['a fractional max_tokens', { model: 'test/ok', messages: [{ role: 'user', content: 'x' }], max_tokens: 1.5 }, 400, 'invalid_request'],
      ['stream as a string', { model: 'test/ok', messages: [{ role: 'user', content: 'x' }], stream: 'yes' }, 400, 'invalid_request'],
      ['an unknown model', { model: 'nobody/nothing', messages: [{ role: 'user', content: 'x' }] }, 409, 'model_unavailable'],
      ['a coming_soon model', { model: 'test/soon', messages: [{ role: 'user', content: 'x' }] }, 409, 'model_unavailable'],
    ])('%s → %i %s', async (_name, body, status, code) => {
      const before = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId]);
      const r = await call(body);
      expect(r.status).toBe(status);
      const json = await r.json();
      expect(json.error).toMatchObject({ code, request_id: expect.stringMatching(/^req_/) });
      expect(r.headers.get('x-ratelimit-remaining')).not.toBeNull();
      const after = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId]);
      expect(after).toEqual(before);
    });

    it('malformed JSON → 400 invalid_request', async () => {
      const r = await fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
        body: '{"model": ',
      });
      expect(r.status).toBe(400);
      expect((await r.json()).error).toMatchObject({ code: 'invalid_request', request_id: expect.stringMatching(/^req_/) });
    });
  });

  it('accepts the key as Bearer, bare Authorization and x-api-key; refuses anything else with 401 and a request id', async () => {
    for (const headers of [{ authorization: `Bearer ${acct.key}` }, { authorization: acct.key }, { 'x-api-key': acct.key }] as Record<
      string,
      string
    >[]) {
      const r = await fetch(`${gw.url}/v1/credits`, { headers });
      expect(r.status).toBe(200);
    }
    for (const headers of [{}, { authorization: 'Bearer sk_live_nope' }, { authorization: 'Bearer nope' }] as Record<string, string>[]) {
      const r = await fetch(`${gw.url}/v1/credits`, { headers });
      expect(r.status).toBe(401);
      expect((await r.json()).error).toMatchObject({ code: 'invalid_api_key', request_id: expect.stringMatching(/^req_/) });
    }
  });

  it('describes the calling key', async () => {
    const capped = await gw.admin('POST', `/admin/v1/accounts/${acct.accountId}/keys`, { label: 'capped', limit: 2.5 });
    const r = await fetch(`${gw.url}/v1/key`, { headers: { authorization: `Bearer ${capped.json.data.key}` } });
    const { data } = await r.json();
    expect(data).toMatchObject({
      label: 'capped',
      limit: 2.5,
      usage: 0,
      limit_remaining: 2.5,
      is_provisioning_key: false,
      is_free_tier: false,
      rate_limit: { requests: 600, interval: '60s' },
      limit_reset: null,
      is_management_key: false,
      byok_usage: 0,
      key_id: capped.json.data.key_id,
      account_id: acct.accountId,
      expires_at: null,
    });
    expect(Date.parse(data.created_at)).not.toBeNaN();
    expect(Date.parse(data.last_used_at)).not.toBeNaN();
  });

  it('answers 404 model_unavailable for an unknown or foreign generation id', async () => {
    const other = await gw.account(1);
    const r = await call({ model: 'test/ok', messages: [{ role: 'user', content: 'ping' }] }, other.key);
    const id = r.headers.get('x-gateway-request-id');
    await settled(gw, other.accountId);
    for (const q of [id, 'req_doesnotexist']) {
      const g = await fetch(`${gw.url}/v1/generation?id=${q}`, { headers: { authorization: `Bearer ${acct.key}` } });
      expect(g.status).toBe(404);
      expect((await g.json()).error.code).toBe('model_unavailable');
    }
    const noId = await fetch(`${gw.url}/v1/generation`, { headers: { authorization: `Bearer ${acct.key}` } });
    expect(noId.status).toBe(400);
  });

  it('refuses with 402 naming balance, held and the amount needed, and holds nothing', async () => {
    const poor = await gw.account('0.01');
    const r = await call({ model: 'test/pricey', messages: [{ role: 'user', content: 'ping' }] }, poor.key);
    expect(r.status).toBe(402);
    const { error } = await r.json();
    expect(error.code).toBe('insufficient_credits');
    expect(error.message).toMatch(/balance 0\.01 USD.*held .*0 USD.*needs \d+(\.\d+)? USD/);
    const [acc] = await gw.ledger(`SELECT held::text AS h FROM accounts WHERE id = $1`, [poor.accountId]);
    expect(acc.h).toBe('0');
  });

  it('refuses a suspended account with 402 saying so', async () => {
    const s = await gw.account(5);
    expect((await gw.admin('PATCH', `/admin/v1/accounts/${s.accountId}`, { suspended: true })).status).toBe(200);
    const r = await call({ model: 'test/ok', messages: [{ role: 'user', content: 'ping' }] }, s.key);
    expect(r.status).toBe(402);
    expect((await r.json()).error.message).toMatch(/suspended/);
  });

  it("refuses past a key's spend cap", async () => {
    const capped = await gw.account(5, { keyLimit: 0.1 });
    const r = await call({ model: 'test/ok', messages: [{ role: 'user', content: 'ping' }] }, capped.key);
    expect(r.status).toBe(402); // worst case 0.212 > cap 0.1
    expect((await r.json()).error.message).toMatch(/spend limit/);
  });

  it('answers 409 duplicate_request for a second request with the same Idempotency-Key while the first runs', async () => {
    const body = { model: 'test/slow', messages: [{ role: 'user', content: 'ping' }] };
    const first = call(body, acct.key, { 'idempotency-key': 'idem-1' });
    // The upstream answers 700 ms after the hold is placed: a second request sent once the hold is there meets it open.
    await ledgerRow(gw, 'the first request to hold', `SELECT id FROM holds WHERE account_id = $1 AND idempotency_key = 'idem-1' AND state = 'open'`, [
      acct.accountId,
    ]);
    const second = await call(body, acct.key, { 'idempotency-key': 'idem-1' });
    expect(second.status).toBe(409);
    expect((await second.json()).error.code).toBe('duplicate_request');
    expect((await first).status).toBe(200);
    await settled(gw, acct.accountId);
    const again = await call(body, acct.key, { 'idempotency-key': 'idem-1' });
    expect(again.status).toBe(200);
    await settled(gw, acct.accountId);
  });

  it('releases the hold when the client leaves before the first byte, and blames no endpoint', async () => {
    const who = await gw.account(1);
    const controller = new AbortController();
    const pending = call({ model: 'test/slow', messages: [{ role: 'user', content: 'ping' }], stream: true }, who.key, {}).catch(() => undefined);
    void pending;
    const aborted = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      signal: controller.signal,
      headers: { authorization: `Bearer ${who.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/slow', messages: [{ role: 'user', content: 'leaving' }], stream: true }),
    }).catch((e) => e);
    // Upstream reached, its answer 700 ms away: the client leaves before the first byte.
    await fake.received((q) => q.body.messages?.[0]?.content === 'leaving', 'the request of the client that leaves');
    controller.abort();
    await aborted;
    await pending;
    await settled(gw, who.accountId);
    const rows = await gw.ledger(
      `SELECT h.state, u.error_code FROM holds h JOIN usage_records u ON u.hold_id = h.id WHERE h.account_id = $1 ORDER BY u.error_code NULLS FIRST`,
      [who.accountId],
    );
    expect(rows).toEqual([
      { state: 'settled', error_code: null },
      { state: 'released', error_code: 'client_closed' },
    ]);
  });

  it('never overspends: 50 concurrent requests against a small balance', async () => {
    const small = await gw.account(1);
    const results = await Promise.all(
      Array.from({ length: 50 }, () => call({ model: 'test/ok', messages: [{ role: 'user', content: 'ping' }] }, small.key)),
    );
    const ok = results.filter((r) => r.status === 200).length;
    const refused = results.filter((r) => r.status === 402).length;
    expect(ok + refused).toBe(50);
    expect(ok).toBeGreaterThanOrEqual(4); // 4 worst cases (0.212 each) fit in 1 USD at once
    await settled(gw, small.accountId);
    const [a] = await gw.ledger(
      `SELECT total_usage::text AS u, held::text AS h, (total_credits - total_usage - held)::text AS avail FROM accounts WHERE id = $1`,
      [small.accountId],
    );
    expect(a.u).toBe(String(ok * 5_000_000));
    expect(a.h).toBe('0');
    expect(BigInt(a.avail) >= 0n).toBe(true);
    const [rec] = await gw.ledger(`SELECT count(*)::int AS n, COALESCE(sum(total_cost), 0)::text AS s FROM usage_records WHERE account_id = $1`, [
      small.accountId,
    ]);
    expect(rec).toEqual({ n: ok, s: a.u });
  });

  it('meters the account: 429 with Retry-After past its limit, counting refused requests too', async () => {
    const limited = await gw.account(5, { rate_limit: { requests: 3, interval: '60s' } });
    await inFreshWindowIfNeeded(10_000);
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 5; i++) {
      last = await fetch(`${gw.url}/v1/credits`, { headers: { authorization: `Bearer ${limited.key}` } });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(last!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(last!.headers.get('x-gateway-limit-type')).toBe('requests');
    expect(last!.headers.get('x-ratelimit-limit')).toBe('3');
    expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(last!.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    expect((await last!.json()).error.code).toBe('rate_limited');
  }, 30_000);

  it('stops a revoked key within seconds', async () => {
    const k = await gw.account(1);
    expect((await fetch(`${gw.url}/v1/key`, { headers: { authorization: `Bearer ${k.key}` } })).status).toBe(200);
    expect((await gw.admin('DELETE', `/admin/v1/keys/${k.keyId}`)).status).toBe(204);
    const deadline = Date.now() + 7_000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) {
      status = (await fetch(`${gw.url}/v1/key`, { headers: { authorization: `Bearer ${k.key}` } })).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).toBe(401);
  }, 15_000);

  // Last: they stop billing for good.
  (isFleet(mode) ? describe : describe.skip)('with billing down (fleet only: embedded, billing shares the one process and cannot fail alone)', () => {
    let killed: Promise<void> | undefined;
    const billingDown = () => (killed ??= gw.killService!('billing'));
    // Made while billing is up; the edge never verifies it before billing goes, so never caches it.
    let unverified: { accountId: string; key: string };
    beforeAll(async () => {
      unverified = await gw.account(1);
    });

    it('answers 503 in the envelope and holds nothing when billing is down at hold time, though the edge still has the key cached', async () => {
      const k = await gw.account(1);
      // Each edge caches the keys it verified, for 5 s: every edge replica verifies this one, on its own listener.
      for (const edge of gw.fleet!.edgeUrls) expect((await call(ping, k.key, {}, edge)).status).toBe(200);
      await settled(gw, k.accountId); // that call's settle lands before billing goes
      const holds = await holdCount(gw, k.accountId);
      const sent = fake.requests.length;
      await billingDown();
      const r = await call(ping, k.key);
      expect(r.status).toBe(503);
      expect((await r.json()).error).toMatchObject({ code: 'upstream_unavailable', request_id: expect.stringMatching(/^req_/) });
      // Metered, so the edge took the key from its cache and passed the request on: this 503 is the hold's.
      expect(r.headers.get('x-ratelimit-remaining')).not.toBeNull();
      expect(await holdCount(gw, k.accountId)).toBe(holds);
      expect(fake.requests.length).toBe(sent);
    });

    it('answers 503, never 401, when the key service is unreachable', async () => {
      const [held] = await gw.ledger(`SELECT count(*)::int AS n FROM holds`);
      await billingDown();
      const r = await call(ping, unverified.key);
      expect(r.status).toBe(503);
      expect((await r.json()).error).toMatchObject({ code: 'upstream_unavailable', request_id: expect.stringMatching(/^req_/) });
      // Refused at the key lookup, before the meter: the other 503 above is not this one.
      expect(r.headers.get('x-ratelimit-remaining')).toBeNull();
      expect(await gw.ledger(`SELECT count(*)::int AS n FROM holds`)).toEqual([held]);
    });
  });
});
