import { countTokens, countTokensOfAll } from '@gateway/upstreams';
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from './support/fake-anthropic';
import { startFakeCohere } from './support/fake-cohere';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { TEXT_PRICE } from './support/config';
import { MALFORMED_USAGE_KINDS } from './support/malformed-usage';
import { nano, textCost } from './support/money';
import { closedHold, expectReleased, generationOf, usageRecord, useGatewaySuite, type Mode, type TestGateway } from './support/harness';

const modes: Mode[] = ['embedded', 'fleet'];
const ANTHROPIC_KEY_ENV = 'GW_E2E_ANSWERS_ANTHROPIC_KEY';
const COHERE_KEY_ENV = 'GW_E2E_ANSWERS_COHERE_KEY';
const INPUT_PRICE = { prompt: '0.001' };

/**
 * Issue 31, item 5: an upstream's answer is checked where it arrives. Usage that is fractional, a string, negative
 * or huge is billed as missing usage is (the gateway's own count); an answer in the wrong shape fails over.
 * One endpoint per behaviour, so no circuit is shared.
 */
function answersConfig([openai, anthropic, cohere]: FakeUpstream[]) {
  const model = (id: string, category: string, endpoints: Array<[string, string]>, pricing: object = TEXT_PRICE) => ({
    id,
    name: id,
    category,
    status: 'available',
    ...(category === 'text' ? { context_length: 4096, max_output_tokens: 100 } : {}),
    pricing,
    endpoints: endpoints.map(([provider, m]) => ({ provider, model: m })),
  });
  return {
    providers: [
      { id: 'oai', kind: 'openai', base_url: openai.url, timeout_ms: 10_000 },
      { id: 'anth', kind: 'anthropic', base_url: anthropic.url, api_key_env: ANTHROPIC_KEY_ENV, timeout_ms: 10_000 },
      { id: 'co', kind: 'cohere', base_url: cohere.url, api_key_env: COHERE_KEY_ENV, timeout_ms: 10_000 },
    ],
    models: [
      ...MALFORMED_USAGE_KINDS.flatMap((kind) => [
        model(`bad/gpt-${kind}`, 'text', [['oai', `bad-usage-${kind}`]]),
        model(`bad/claude-${kind}`, 'text', [['anth', `bad-usage-${kind}`]]),
        model(`bad/embed-${kind}`, 'embedding', [['oai', `bad-usage-${kind}`]], INPUT_PRICE),
        model(`bad/rerank-${kind}`, 'rerank', [['co', `bad-usage-${kind}`]], INPUT_PRICE),
      ]),
      model('shape/gpt-first', 'text', [
        ['oai', 'bad-content'],
        ['oai', 'ok'],
      ]),
      model('shape/claude-first', 'text', [
        ['anth', 'bad-content'],
        ['anth', 'ok'],
      ]),
      // Its own endpoint: the failover test above counts a failure against the other one.
      model('shape/gpt-only', 'text', [['oai', 'bad-content']]),
    ],
  };
}

describe.each(modes)('upstream answers checked at the boundary, through the %s gateway', (mode) => {
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };

  const upstreams = async () => {
    process.env[ANTHROPIC_KEY_ENV] = FAKE_ANTHROPIC_KEY;
    process.env[COHERE_KEY_ENV] = 'co-test-key';
    return Promise.all([startFakeOpenAI(), startFakeAnthropic(), startFakeCohere()]);
  };
  useGatewaySuite(mode, { upstreams, config: answersConfig, credits: 50 }, (s) => {
    ({ gw, acct } = s);
  });
  afterAll(() => {
    delete process.env[ANTHROPIC_KEY_ENV];
    delete process.env[COHERE_KEY_ENV];
  });

  const post = (path: string, body: unknown) =>
    fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const ping = (model: string, stream = false) => ({ model, messages: [{ role: 'user', content: 'ping' }], ...(stream ? { stream: true } : {}) });

  /** The usage chunk of an SSE answer (the last `data:` frame before [DONE] that carries usage). */
  const streamedUsage = (text: string) => {
    const frames = text
      .split('\n\n')
      .filter((f) => f.startsWith('data: ') && f !== 'data: [DONE]')
      .map((f) => JSON.parse(f.slice(6)));
    const content = frames.map((f) => f.choices?.[0]?.delta?.content ?? '').join('');
    const withUsage = frames.filter((f) => f.usage);
    // Only the gateway's closing chunk may say usage: no upstream figure rides along on a content chunk.
    expect(withUsage).toHaveLength(1);
    expect(withUsage[0].choices).toEqual([]);
    return { content, usage: withUsage[0].usage };
  };

  /**
   * What a client must see and the ledger must hold for one answered call: the gateway's figures (non-negative
   * integers), a cost that is an exact non-negative decimal, the same in the record and the settled hold.
   */
  const expectBilledAsCounted = async (requestId: string | null, usage: any, model: string, counted: { prompt: number; completion?: number }) => {
    expect(Number.isSafeInteger(usage.prompt_tokens) && usage.prompt_tokens >= 0).toBe(true);
    expect(Number.isSafeInteger(usage.completion_tokens) && usage.completion_tokens > 0).toBe(true);
    expect(usage.prompt_tokens).toBe(counted.prompt);
    if (counted.completion !== undefined) expect(usage.completion_tokens).toBe(counted.completion);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    const charge = textCost(TEXT_PRICE, usage.prompt_tokens, usage.completion_tokens);
    // nano() takes exact non-negative decimals only: "-0.000989999" or "1e+300" would throw.
    expect(nano(usage.cost)).toBe(charge);
    expect(await closedHold(gw, acct.accountId, requestId)).toMatchObject({ state: 'settled', charge: charge.toString() });
    expect(await usageRecord(gw, acct.accountId, requestId)).toMatchObject({
      model,
      status: 'succeeded',
      tokens_prompt: usage.prompt_tokens,
      tokens_completion: usage.completion_tokens,
      cost: charge.toString(),
    });
  };

  describe.each(MALFORMED_USAGE_KINDS)('usage reported %s', (kind) => {
    it.each(['gpt', 'claude'])('answers a %s chat call with the counted usage and charges it', async (family) => {
      const model = `bad/${family}-${kind}`;
      const r = await post('/v1/chat/completions', ping(model));
      expect(r.status).toBe(200);
      const body = await r.json();
      expect(body.choices[0].message.content).toBe('pong');
      await expectBilledAsCounted(r.headers.get('x-gateway-request-id'), body.usage, model, { prompt: await countTokens('ping') });
    });

    it.each(['gpt', 'claude'])('streams a %s chat call, closing with the counted usage, and charges it', async (family) => {
      const model = `bad/${family}-${kind}`;
      const r = await post('/v1/chat/completions', ping(model, true));
      expect(r.status).toBe(200);
      const { content, usage } = streamedUsage(await r.text());
      expect(content).toBe('pong');
      await expectBilledAsCounted(r.headers.get('x-gateway-request-id'), usage, model, {
        prompt: await countTokens('ping'),
        completion: await countTokens('pong'),
      });
    });

    it('answers embeddings with the counted input tokens and charges them', async () => {
      const r = await post('/v1/embeddings', { model: `bad/embed-${kind}`, input: 'hello world' });
      expect(r.status).toBe(200);
      const body = await r.json();
      const counted = await countTokens('hello world');
      expect(body.usage).toEqual({ prompt_tokens: counted, total_tokens: counted, cost: expect.any(String) });
      const charge = BigInt(counted) * nano(INPUT_PRICE.prompt);
      expect(nano(body.usage.cost)).toBe(charge);
      const requestId = r.headers.get('x-gateway-request-id');
      expect(await closedHold(gw, acct.accountId, requestId)).toMatchObject({ state: 'settled', charge: charge.toString() });
      expect(await usageRecord(gw, acct.accountId, requestId)).toMatchObject({
        status: 'succeeded',
        tokens_prompt: counted,
        cost: charge.toString(),
      });
    });

    it("answers a rerank with the counted tokens, whatever Cohere's billed units say, and charges them", async () => {
      const query = 'red apple';
      const documents = ['an apple pie', 'red cars'];
      const r = await post('/v1/rerank', { model: `bad/rerank-${kind}`, query, documents });
      expect(r.status).toBe(200);
      const body = await r.json();
      const counted = await countTokensOfAll([query, ...documents]);
      expect(body.usage).toEqual({ total_tokens: counted, cost: expect.any(String) });
      const charge = BigInt(counted) * nano(INPUT_PRICE.prompt);
      expect(nano(body.usage.cost)).toBe(charge);
      expect(await closedHold(gw, acct.accountId, body.id)).toMatchObject({ state: 'settled', charge: charge.toString() });
    });
  });

  it('counts every refused figure per endpoint in Prometheus', async () => {
    expect((await post('/v1/chat/completions', ping('bad/gpt-string'))).status).toBe(200);
    expect((await post('/v1/chat/completions', ping('bad/claude-negative', true))).status).toBe(200);
    expect((await post('/v1/rerank', { model: 'bad/rerank-fraction', query: 'q', documents: ['d'] })).status).toBe(200);
    const metrics = await (await fetch(`${gw.metricsUrl('text')}/metrics`)).text();
    expect(metrics).toMatch(/gateway_upstream_malformed_usage_total\{endpoint="oai\/bad-usage-string"\} [1-9]/);
    expect(metrics).toMatch(/gateway_upstream_malformed_usage_total\{endpoint="anth\/bad-usage-negative"\} [1-9]/);
    expect(metrics).toMatch(/gateway_upstream_malformed_usage_total\{endpoint="co\/bad-usage-fraction"\} [1-9]/);
  });

  it.each([
    ['an OpenAI-kind', 'shape/gpt-first'],
    ['a message-API', 'shape/claude-first'],
  ])('fails over from %s answer in the wrong shape to the next endpoint, charging only the answer', async (_name, model) => {
    const r = await post('/v1/chat/completions', ping(model));
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body.choices[0].message.content).toBe('pong');
    const requestId = r.headers.get('x-gateway-request-id');
    // The hold first: it waits for the settle, which the fleet's generation record follows over the bus.
    expect(await closedHold(gw, acct.accountId, requestId)).toMatchObject({ state: 'settled', charge: nano(body.usage.cost).toString() });
    expect(await generationOf(gw, acct.key, requestId)).toMatchObject({ status: 'succeeded', attempts: 2, fallback_used: true });
  });

  it('answers 503 upstream_unavailable, charging nothing, when every endpoint answers in the wrong shape', async () => {
    const r = await post('/v1/chat/completions', ping('shape/gpt-only'));
    expect(r.status).toBe(503);
    const body = await r.json();
    expect(body.error.code).toBe('upstream_unavailable');
    await expectReleased(gw, acct.accountId, body.error.request_id, 'upstream_unavailable');
  });
});
