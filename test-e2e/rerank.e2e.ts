import { countTokensOfAll } from '@gateway/upstreams';
import { fakeScore, startFakeCohere, type FakeCohere } from './support/fake-cohere';
import { settled, type Mode, type TestGateway, closedHold, generationOf, useGatewaySuite } from './support/harness';
import { plainChatModel } from './support/config';

const modes: Mode[] = ['embedded', 'fleet'];
const COHERE_KEY_ENV = 'E2E_FAKE_COHERE_KEY';
// One token costs 0.001 USD = 1,000,000 nano-USD, so every figure below is a whole number of tokens.
const NANO_PER_TOKEN = 1_000_000n;

/**
 * Each failing behaviour has its own endpoint (provider/model), so no test opens a circuit another relies on; only
 * `co-stall`, which nothing healthy uses, has a timeout short enough for a loaded machine to reach by accident.
 */
function rerankConfig(cohereUrl: string) {
  const model = (id: string, endpoints: Array<[string, string]>, extra: Record<string, unknown> = {}) => ({
    id,
    name: id,
    category: 'rerank',
    status: 'available',
    pricing: { prompt: '0.001' },
    endpoints: endpoints.map(([provider, m]) => ({ provider, model: m })),
    ...extra,
  });
  return {
    providers: [
      { id: 'co', kind: 'cohere', base_url: cohereUrl, api_key_env: COHERE_KEY_ENV, timeout_ms: 10_000 },
      { id: 'co-stall', kind: 'cohere', base_url: cohereUrl, api_key_env: COHERE_KEY_ENV, timeout_ms: 400 },
      // An OpenAI-kind provider has no rerank: its endpoints must fail over like broken ones.
      { id: 'oai', kind: 'openai', base_url: cohereUrl, timeout_ms: 400 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      model('test/rerank', [['co', 'ok']]),
      model('test/rerank-tokens', [['co', 'tokens-5']]),
      model('test/rerank-unsorted', [['co', 'unsorted']]),
      model('test/rerank-failover', [
        ['co', 'status-500'],
        ['co', 'ok'],
      ]),
      model('test/rerank-slow-first', [
        ['co-stall', 'slow-1500'],
        ['co', 'ok'],
      ]),
      model('test/rerank-wrong-kind', [
        ['oai', 'ok'],
        ['co', 'ok'],
      ]),
      model('test/rerank-all-fail', [
        ['co', 'status-503'],
        ['co', 'status-429'],
      ]),
      model('test/rerank-client-error', [
        ['co', 'status-422'],
        ['co', 'ok'],
      ]),
      model('test/rerank-sim', [['sim', 'sim-rerank']]),
      model('test/rerank-soon', [['co', 'ok']], { status: 'coming_soon' }),
      plainChatModel('co', 'ok'),
      {
        id: 'test/embed',
        name: 'embed',
        category: 'embedding',
        status: 'available',
        pricing: { prompt: '0.001' },
        endpoints: [{ provider: 'sim', model: 'e' }],
      },
    ],
  };
}

describe.each(modes)('POST /v1/rerank through the %s gateway', (mode) => {
  let fake: FakeCohere;
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };

  const upstreams = async () => {
    process.env[COHERE_KEY_ENV] = 'co-test-key';
    return startFakeCohere();
  };
  useGatewaySuite(mode, { upstreams, config: (f) => rerankConfig(f.url), credits: 50 }, (s) => {
    ({ upstreams: fake, gw, acct } = s);
  });
  afterAll(() => {
    delete process.env[COHERE_KEY_ENV];
  });

  const rerank = (body: unknown) =>
    fetch(`${gw.url}/v1/rerank`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const holdOf = (requestId: string | null) => closedHold(gw, acct.accountId, requestId);
  const generation = (requestId: string | null) => generationOf(gw, acct.key, requestId);
  const bytes = (texts: string[]) => texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  const tokens = countTokensOfAll;

  const query = 'red apple pie';
  const documents = ['blue sky over the sea', 'an apple pie recipe', 'the red apple pie of grandma', 'red cars'];

  it('ranks in relevance order with request indexes, speaks Cohere upstream, and charges the counted tokens exactly', async () => {
    const n = fake.requests.length;
    const r = await rerank({ model: 'test/rerank', query, documents });
    expect(r.status).toBe(200);
    const requestId = r.headers.get('x-gateway-request-id');
    const body = await r.json();

    const expected = documents
      .map((d, index) => ({ index, relevance_score: fakeScore(query, d) }))
      .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
    expect(body).toEqual({
      id: requestId,
      model: 'test/rerank',
      results: expected,
      usage: { total_tokens: await tokens([query, ...documents]), cost: expect.any(String) },
    });
    expect(body.results.map((x: any) => x.index)).toEqual([2, 1, 3, 0]);

    expect(fake.requests.length - n).toBe(1);
    const sent = fake.requests[n];
    expect(sent.body).toEqual({ model: 'ok', query, documents, top_n: 4, return_documents: false });
    expect(sent.headers.authorization).toBe('Bearer co-test-key');

    const counted = BigInt(await tokens([query, ...documents]));
    const hold = await holdOf(requestId);
    expect(hold).toEqual({
      amount: String(BigInt(bytes([query, ...documents])) * NANO_PER_TOKEN),
      charge: String(counted * NANO_PER_TOKEN),
      state: 'settled',
    });
    expect(body.usage.cost).toBe((Number(counted) / 1000).toString());
    expect(await generation(requestId)).toMatchObject({
      model: 'test/rerank',
      status: 'succeeded',
      tokens_prompt: Number(counted),
      tokens_completion: 0,
      cost: body.usage.cost,
      attempts: 1,
    });
  }, 20_000); // the first count loads the o200k tokenizer, in the gateway and here: seconds on a busy machine

  it('takes {text} objects, honours top_n and return_documents', async () => {
    const r = await rerank({
      model: 'test/rerank',
      query,
      documents: documents.map((text, i) => ({ text, id: `doc-${i}` })),
      top_n: 2,
      return_documents: true,
    });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body.results).toEqual([
      { index: 2, relevance_score: 1, document: { text: documents[2] } },
      { index: 1, relevance_score: 2 / 3, document: { text: documents[1] } },
    ]);
    // The upstream got plain strings and was asked for the top 2 only.
    expect(fake.requests[fake.requests.length - 1].body).toMatchObject({ documents, top_n: 2, return_documents: false });
    await settled(gw, acct.accountId);
  });

  it('charges the tokens the upstream reports when it reports them', async () => {
    const r = await rerank({ model: 'test/rerank-tokens', query, documents });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body.usage).toEqual({ total_tokens: 5, cost: '0.005' });
    expect((await holdOf(r.headers.get('x-gateway-request-id'))).charge).toBe(String(5n * NANO_PER_TOKEN));
  });

  it('orders and trims an answer that ignores relevance order and top_n', async () => {
    const r = await rerank({ model: 'test/rerank-unsorted', query, documents, top_n: 3 });
    const body = await r.json();
    expect(body.results.map((x: any) => x.index)).toEqual([2, 1, 3]);
    expect(body.results.map((x: any) => x.relevance_score)).toEqual([1, 2 / 3, 1 / 3]);
    expect(body.results[0].document).toBeUndefined();
    await settled(gw, acct.accountId);
  });

  it.each([
    ['a 5xx', 'test/rerank-failover'],
    ['no response head within timeout_ms', 'test/rerank-slow-first'],
    ['a provider kind without rerank', 'test/rerank-wrong-kind'],
  ])('fails over on %s and charges only the answering endpoint', async (_why, model) => {
    const r = await rerank({ model, query, documents });
    expect(r.status).toBe(200);
    expect((await r.json()).results).toHaveLength(documents.length);
    const requestId = r.headers.get('x-gateway-request-id');
    expect((await holdOf(requestId)).charge).toBe(String(BigInt(await tokens([query, ...documents])) * NANO_PER_TOKEN));
    expect(await generation(requestId)).toMatchObject({ attempts: 2, fallback_used: true, status: 'succeeded' });
  });

  it('answers 503 when every endpoint fails, and releases the hold', async () => {
    const r = await rerank({ model: 'test/rerank-all-fail', query, documents });
    expect(r.status).toBe(503);
    const { error } = await r.json();
    expect(error.code).toBe('upstream_unavailable');
    expect(await holdOf(error.request_id)).toMatchObject({ state: 'released', charge: '0' });
  });

  it("does not fail over on the upstream's 422, answers 400 and releases the hold", async () => {
    const n = fake.requests.length;
    const r = await rerank({ model: 'test/rerank-client-error', query, documents });
    expect(r.status).toBe(400);
    const { error } = await r.json();
    expect(error.code).toBe('invalid_request');
    expect(error.message).toMatch(/fake cohere says 422/);
    expect(fake.requests.length - n).toBe(1);
    expect(await holdOf(error.request_id)).toMatchObject({ state: 'released' });
  });

  it('serves a simulated rerank model deterministically, by word overlap', async () => {
    const first = await (await rerank({ model: 'test/rerank-sim', query, documents })).json();
    const again = await (await rerank({ model: 'test/rerank-sim', query, documents })).json();
    expect(first.results).toEqual(again.results);
    expect(first.results[0]).toMatchObject({ index: 2 });
    expect(first.results[first.results.length - 1]).toMatchObject({ index: 0, relevance_score: 0 });
    expect(first.usage.total_tokens).toBe(await tokens([query, ...documents]));
    await settled(gw, acct.accountId);
  });

  describe('refusals hold nothing', () => {
    it.each([
      ['1001 documents', 400, 'invalid_request', { model: 'test/rerank', query, documents: Array.from({ length: 1001 }, (_, i) => `d${i}`) }],
      ['no documents', 400, 'invalid_request', { model: 'test/rerank', query, documents: [] }],
      ['an empty query', 400, 'invalid_request', { model: 'test/rerank', query: '', documents }],
      ['no query', 400, 'invalid_request', { model: 'test/rerank', documents }],
      ['a document object without text', 400, 'invalid_request', { model: 'test/rerank', query, documents: [{ body: 'x' }] }],
      ['top_n 0', 400, 'invalid_request', { model: 'test/rerank', query, documents, top_n: 0 }],
      ['a text model', 400, 'invalid_request', { model: 'test/chat', query, documents }],
      ['an embedding model', 400, 'invalid_request', { model: 'test/embed', query, documents }],
      ['an unknown model', 409, 'model_unavailable', { model: 'nobody/nothing', query, documents }],
      ['a coming_soon model', 409, 'model_unavailable', { model: 'test/rerank-soon', query, documents }],
    ])('%s → %i %s', async (_name, status, code, body) => {
      const n = fake.requests.length;
      const before = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId]);
      const r = await rerank(body);
      expect(r.status).toBe(status);
      expect((await r.json()).error).toMatchObject({ code, request_id: expect.stringMatching(/^req_/) });
      const after = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId]);
      expect(after).toEqual(before);
      expect(fake.requests.length).toBe(n);
    });

    it('names the category in the wrong-category message', async () => {
      const { error } = await (await rerank({ model: 'test/chat', query, documents })).json();
      expect(error.message).toMatch(/test\/chat is a text model; \/v1\/rerank serves rerank models only/);
    });

    it('accepts exactly 1000 documents', async () => {
      const r = await rerank({ model: 'test/rerank', query: 'd7', documents: Array.from({ length: 1000 }, (_, i) => `d${i}`), top_n: 1 });
      expect(r.status).toBe(200);
      expect((await r.json()).results).toEqual([{ index: 7, relevance_score: 1 }]);
      await settled(gw, acct.accountId);
    });
  });
});
