import OpenAI from 'openai';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { settled, type Mode, type TestGateway, closedHold, generationOf, useGatewaySuite } from './support/harness';
import { plainChatModel } from './support/config';

const modes: Mode[] = ['embedded', 'fleet'];
// One token costs 0.001 USD = 1,000,000 nano-USD, so every figure below is a whole number of tokens.
const NANO_PER_TOKEN = 1_000_000n;

/** Each failing behaviour has its own endpoint (provider/model), so no test opens a circuit another relies on. */
function embeddingsConfig(fakeUrl: string) {
  const model = (id: string, endpoints: Array<[string, string]>, extra: Record<string, unknown> = {}) => ({
    id,
    name: id,
    category: 'embedding',
    status: 'available',
    pricing: { prompt: '0.001' },
    endpoints: endpoints.map(([provider, m]) => ({ provider, model: m })),
    ...extra,
  });
  return {
    providers: [
      { id: 'fake', kind: 'openai', base_url: fakeUrl, timeout_ms: 10_000 },
      // A Cohere-kind provider has no embeddings: its endpoints must fail over like broken ones.
      { id: 'co', kind: 'cohere', base_url: fakeUrl, timeout_ms: 400 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      model('test/embed', [['fake', 'ok']]),
      model('test/embed-failover', [
        ['fake', 'status-500'],
        ['fake', 'ok'],
      ]),
      model('test/embed-wrong-kind', [
        ['co', 'ok'],
        ['fake', 'ok'],
      ]),
      model('test/embed-all-fail', [
        ['fake', 'status-503'],
        ['fake', 'status-429'],
      ]),
      model('test/embed-client-error', [
        ['fake', 'status-400'],
        ['fake', 'ok'],
      ]),
      model('test/embed-sim', [['sim', 'sim-embed']]),
      model('test/embed-soon', [['fake', 'ok']], { status: 'coming_soon' }),
      plainChatModel('fake', 'ok'),
      {
        id: 'test/rerank',
        name: 'rerank',
        category: 'rerank',
        status: 'available',
        pricing: { prompt: '0.001' },
        endpoints: [{ provider: 'sim', model: 'r' }],
      },
    ],
  };
}

/** The vector fake-openai.ts answers for one input: multiples of 1/16, exact in float32 and in JSON. */
const fakeVector = (input: unknown, index: number, dims = 8) =>
  Array.from({ length: dims }, (_, d) => ((JSON.stringify(input).length + d * 7 + index) % 16) / 16);

describe.each(modes)('POST /v1/embeddings through the %s gateway', (mode) => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let client: OpenAI;

  useGatewaySuite(mode, { upstreams: startFakeOpenAI, config: (f) => embeddingsConfig(f.url), credits: 50 }, (s) => {
    ({ upstreams: fake, gw, acct } = s);
    client = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });

  const post = (body: unknown) =>
    fetch(`${gw.url}/v1/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const holdOf = (requestId: string | null) => closedHold(gw, acct.accountId, requestId);
  const generation = (requestId: string | null) => generationOf(gw, acct.key, requestId);
  const lastSent = () => fake.requests[fake.requests.length - 1].body;

  it('answers the openai client with its default encoding (base64 under the hood), decoded to the exact floats', async () => {
    const { data, response } = await client.embeddings.create({ model: 'test/embed', input: 'hello' }).withResponse();
    // The client asked base64; the gateway asked the upstream for floats and encoded them itself.
    expect(lastSent()).toEqual({ model: 'ok', input: ['hello'], encoding_format: 'float' });
    expect(data.object).toBe('list');
    expect(data.model).toBe('test/embed');
    expect(data.data).toEqual([{ object: 'embedding', index: 0, embedding: fakeVector('hello', 0) }]);
    expect(data.usage).toEqual({ prompt_tokens: 2, total_tokens: 2, cost: '0.002' });

    const requestId = response.headers.get('x-gateway-request-id');
    // Held: 5 bytes of input, at most 5 tokens; charged: the 2 tokens the upstream reported.
    expect(await holdOf(requestId)).toEqual({ amount: String(5n * NANO_PER_TOKEN), charge: String(2n * NANO_PER_TOKEN), state: 'settled' });
    expect(await generation(requestId)).toMatchObject({
      model: 'test/embed',
      status: 'succeeded',
      tokens_prompt: 2,
      tokens_completion: 0,
      cost: '0.002',
      attempts: 1,
    });
  });

  it('answers base64 as little-endian float32 bytes to a plain client', async () => {
    const r = await post({ model: 'test/embed', input: ['a', 'bc'], encoding_format: 'base64' });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(body.data.map((d: { index: number }) => d.index)).toEqual([0, 1]);
    body.data.forEach((d: { embedding: string; index: number }, i: number) => {
      expect(typeof d.embedding).toBe('string');
      const buf = Buffer.from(d.embedding, 'base64');
      expect(Array.from({ length: buf.length / 4 }, (_, k) => buf.readFloatLE(k * 4))).toEqual(fakeVector(['a', 'bc'][i], i));
    });
    await settled(gw, acct.accountId);
  });

  it('answers floats for a string array, in input order, charging the reported tokens', async () => {
    const input = ['one', 'two two', 'three three three'];
    const { data, response } = await client.embeddings.create({ model: 'test/embed', input, encoding_format: 'float' }).withResponse();
    expect(data.data.map((d) => d.index)).toEqual([0, 1, 2]);
    expect(data.data.map((d) => d.embedding)).toEqual(input.map((s, i) => fakeVector(s, i)));
    expect(data.usage).toMatchObject({ prompt_tokens: 6, total_tokens: 6 });
    const hold = await holdOf(response.headers.get('x-gateway-request-id'));
    expect(hold).toEqual({
      amount: String(BigInt(Buffer.byteLength(input.join(''))) * NANO_PER_TOKEN),
      charge: String(6n * NANO_PER_TOKEN),
      state: 'settled',
    });
  });

  it('takes token arrays, holding one token per id', async () => {
    const one = await client.embeddings.create({ model: 'test/embed', input: [1, 2, 3], encoding_format: 'float' });
    expect(lastSent().input).toEqual([[1, 2, 3]]);
    expect(one.data).toHaveLength(1);

    const input = [
      [10, 20, 30],
      [40, 50],
    ];
    const { data, response } = await client.embeddings.create({ model: 'test/embed', input }).withResponse();
    expect(lastSent().input).toEqual(input);
    expect(data.data.map((d) => d.embedding)).toEqual(input.map((t, i) => fakeVector(t, i)));
    expect(await holdOf(response.headers.get('x-gateway-request-id'))).toEqual({
      amount: String(5n * NANO_PER_TOKEN),
      charge: String(4n * NANO_PER_TOKEN),
      state: 'settled',
    });
  });

  it('forwards dimensions and user', async () => {
    const res = await client.embeddings.create({ model: 'test/embed', input: 'hi', dimensions: 3, user: 'user-42' });
    expect(lastSent()).toMatchObject({ dimensions: 3, user: 'user-42' });
    expect(res.data[0].embedding).toEqual(fakeVector('hi', 0, 3));
    await settled(gw, acct.accountId);
  });

  it('serves a simulated model: deterministic unit vectors, 16 dimensions unless asked', async () => {
    const a = await client.embeddings.create({ model: 'test/embed-sim', input: ['the same text', 'another'] });
    const b = await client.embeddings.create({ model: 'test/embed-sim', input: 'the same text', encoding_format: 'float' });
    expect(a.data[0].embedding).toHaveLength(16);
    // base64 carries float32, float carries the double: equal to float32 precision.
    for (const [i, x] of a.data[0].embedding.entries()) expect(x).toBeCloseTo(b.data[0].embedding[i], 6);
    expect(Math.hypot(...b.data[0].embedding)).toBeCloseTo(1, 12);
    expect(a.data[1].embedding).not.toEqual(a.data[0].embedding);
    const c = await client.embeddings.create({ model: 'test/embed-sim', input: 'the same text', dimensions: 64 });
    expect(c.data[0].embedding).toHaveLength(64);
    expect(c.usage.prompt_tokens).toBe(3);
    await settled(gw, acct.accountId);
  });

  it.each([
    ['a 5xx', 'test/embed-failover'],
    ['a provider kind without embeddings', 'test/embed-wrong-kind'],
  ])('fails over on %s and charges only the answering endpoint', async (_why, model) => {
    const { data, response } = await client.embeddings.create({ model, input: 'ping' }).withResponse();
    expect(data.data[0].embedding).toEqual(fakeVector('ping', 0));
    const requestId = response.headers.get('x-gateway-request-id');
    expect((await holdOf(requestId)).charge).toBe(String(2n * NANO_PER_TOKEN));
    expect(await generation(requestId)).toMatchObject({ attempts: 2, fallback_used: true, status: 'succeeded' });
  });

  it('answers 503 when every endpoint fails, and releases the hold', async () => {
    const err = await client.embeddings.create({ model: 'test/embed-all-fail', input: 'ping' }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(503);
    expect(err.error).toMatchObject({ code: 'upstream_unavailable' });
    expect(await holdOf(err.error.request_id)).toMatchObject({ state: 'released', charge: '0' });
  });

  it("does not fail over on the upstream's 400, answers 400 and releases the hold", async () => {
    const n = fake.requests.length;
    const r = await post({ model: 'test/embed-client-error', input: 'ping' });
    expect(r.status).toBe(400);
    const { error } = await r.json();
    expect(error.code).toBe('invalid_request');
    expect(fake.requests.length - n).toBe(1);
    expect(await holdOf(error.request_id)).toMatchObject({ state: 'released' });
  });

  describe('refusals hold nothing', () => {
    it.each([
      ['a text model', 400, 'invalid_request', { model: 'test/chat', input: 'x' }],
      ['a rerank model', 400, 'invalid_request', { model: 'test/rerank', input: 'x' }],
      ['an empty string', 400, 'invalid_request', { model: 'test/embed', input: '' }],
      ['an empty array', 400, 'invalid_request', { model: 'test/embed', input: [] }],
      ['an empty string in an array', 400, 'invalid_request', { model: 'test/embed', input: ['x', ''] }],
      ['an empty token array', 400, 'invalid_request', { model: 'test/embed', input: [[]] }],
      ['no input', 400, 'invalid_request', { model: 'test/embed' }],
      ['an unknown encoding_format', 400, 'invalid_request', { model: 'test/embed', input: 'x', encoding_format: 'int8' }],
      ['dimensions 0', 400, 'invalid_request', { model: 'test/embed', input: 'x', dimensions: 0 }],
      ['an unknown model', 409, 'model_unavailable', { model: 'nobody/nothing', input: 'x' }],
      ['a coming_soon model', 409, 'model_unavailable', { model: 'test/embed-soon', input: 'x' }],
    ])('%s → %i %s', async (_name, status, code, body) => {
      const n = fake.requests.length;
      const before = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId]);
      const r = await post(body);
      expect(r.status).toBe(status);
      expect((await r.json()).error).toMatchObject({ code, request_id: expect.stringMatching(/^req_/) });
      const after = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId]);
      expect(after).toEqual(before);
      expect(fake.requests.length).toBe(n);
    });

    it('names the category in the wrong-category message, through the openai client too', async () => {
      const err = await client.embeddings.create({ model: 'test/chat', input: 'x' }).catch((e) => e);
      expect(err.status).toBe(400);
      expect(err.error.message).toMatch(/test\/chat is a text model; \/v1\/embeddings serves embedding models only/);
    });
  });
});
