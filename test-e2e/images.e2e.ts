import OpenAI from 'openai';
import { fakeImage } from './support/fake-openai-images';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import {
  closedHold,
  expectReleased,
  generationOf,
  holdCount,
  ledgerRow,
  type Mode,
  type TestGateway,
  useGatewaySuite,
  REPLICATED_FLEET,
} from './support/harness';
import { nano } from './support/money';
import { plainChatModel } from './support/config';

const modes: Mode[] = ['embedded', REPLICATED_FLEET];
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const FILE_URL = /\/v1\/files\/file_[a-z0-9]{24}$/;
/** Per image, as the catalogue below prices it. */
const RATE = '0.04';
const RATE_2K = '0.08';

/** Each failing behaviour has its own endpoint (provider/model), so no test opens a circuit another relies on. */
function imagesConfig(fakeUrl: string) {
  const model = (id: string, endpoints: Array<[string, string]>, extra: Record<string, unknown> = {}) => ({
    id,
    name: id,
    category: 'image',
    status: 'available',
    pricing: { image: RATE },
    endpoints: endpoints.map(([provider, m]) => ({ provider, model: m })),
    ...extra,
  });
  return {
    providers: [
      { id: 'fake', kind: 'openai', base_url: fakeUrl, timeout_ms: 10_000 },
      // A Cohere-kind provider makes no images: its endpoints must fail over like broken ones.
      { id: 'co', kind: 'cohere', base_url: fakeUrl, timeout_ms: 400 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      model('test/image', [['fake', 'images-url']]),
      model('test/image-b64', [['fake', 'images-b64']], { pricing: { image: RATE, image_by_resolution: { '2K': RATE_2K } } }),
      model('test/image-one', [['fake', 'images-one']]),
      model('test/image-failover', [
        ['fake', 'status-500'],
        ['fake', 'images-b64'],
      ]),
      model('test/image-wrong-kind', [
        ['co', 'images-b64'],
        ['fake', 'images-b64'],
      ]),
      model('test/image-all-fail', [
        ['fake', 'status-503'],
        ['fake', 'status-502'],
      ]),
      model('test/image-client-error', [
        ['fake', 'status-400'],
        ['fake', 'images-b64'],
      ]),
      model('test/image-sim', [['sim', 'sim-image']]),
      model('test/image-hang', [['fake', 'images-hang']]),
      model('test/image-soon', [['fake', 'images-b64']], { status: 'coming_soon' }),
      plainChatModel('fake', 'ok'),
    ],
  };
}

describe.each(modes)('POST /v1/images/generations through the %s gateway', (mode) => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let client: OpenAI;
  /** host:port of the fake upstream, which no answer of the gateway may name. */
  let upstreamHost: string;

  useGatewaySuite(mode, { upstreams: startFakeOpenAI, config: (f) => imagesConfig(f.url), credits: 50 }, (s) => {
    ({ upstreams: fake, gw, acct } = s);
    client = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    upstreamHost = new URL(fake.url).host;
  });

  const auth = () => ({ authorization: `Bearer ${acct.key}` });
  /** POSTs and reads the whole answer, checking on the way that it names no upstream address. */
  const post = async (body: unknown, path = '/v1/images/generations') => {
    const r = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    expectNoUpstreamIn(r.headers, text);
    return { status: r.status, headers: r.headers, json: JSON.parse(text) };
  };
  const getFile = async (url: string, headers: Record<string, string> = {}) => {
    const r = await fetch(url, { headers: { ...auth(), ...headers } });
    const bytes = Buffer.from(await r.arrayBuffer());
    expectNoUpstreamIn(r.headers, bytes.toString('latin1'));
    return { status: r.status, headers: r.headers, bytes };
  };
  const expectNoUpstreamIn = (headers: Headers, body: string) => {
    expect(body).not.toContain(upstreamHost);
    for (const [name, value] of headers) expect(`${name}: ${value}`).not.toContain(upstreamHost);
  };
  const holdOf = (requestId: string | null) => closedHold(gw, acct.accountId, requestId);
  const lastSent = () => fake.requests.filter((r) => r.body.prompt !== undefined).at(-1)!.body;

  it('answers the openai client with gateway URLs that serve the images, charging each at the unit rate', async () => {
    const { data, response } = await client.images.generate({ model: 'test/image', prompt: 'two cats', n: 2 }).withResponse();
    expect(lastSent()).toEqual({ model: 'images-url', prompt: 'two cats', n: 2 });
    // The contract's Images shape names the model; the client's type does not, so it is read untyped.
    expect(data).toMatchObject({ model: 'test/image' });
    expect(data.created).toBeGreaterThan(1_700_000_000);
    expect(data.data).toHaveLength(2);
    for (const [i, image] of (data.data ?? []).entries()) {
      expect(image.url?.startsWith(`${gw.url}/v1/files/`)).toBe(true);
      expect(image.url).toMatch(FILE_URL);
      const file = await getFile(image.url!);
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toBe('image/png');
      expect(file.bytes).toEqual(fakeImage(i));
      // The origin's own headers stay behind.
      expect(file.headers.get('server')).toBeNull();
      expect(file.headers.get('x-origin-host')).toBeNull();
    }
    const cost = String(2n * nano(RATE));
    expect(response.headers.get('x-gateway-cost')).toBe('0.08');
    const requestId = response.headers.get('x-gateway-request-id');
    expect(await holdOf(requestId)).toEqual({ amount: cost, charge: cost, state: 'settled' });
    expect(await generationOf(gw, acct.key, requestId)).toMatchObject({
      model: 'test/image',
      status: 'succeeded',
      num_media_completion: 2,
      attempts: 1,
      fallback_used: false,
    });
  });

  it('serves a range of an image from its origin and from the gateway storage alike', async () => {
    const fromOrigin = (await post({ model: 'test/image', prompt: 'range' })).json.data[0].url;
    const stored = (await post({ model: 'test/image-b64', prompt: 'range' })).json.data[0].url;
    for (const url of [fromOrigin, stored]) {
      const head = await getFile(url, { range: 'bytes=0-7' });
      expect(head.status).toBe(206);
      expect(head.bytes).toEqual(PNG_SIGNATURE);
      expect(head.headers.get('content-range')).toBe(`bytes 0-7/${fakeImage(0).length}`);
    }
  });

  it('stores inline images behind the same URLs; POST /v1/images is the same route', async () => {
    const r = await post({ model: 'test/image-b64', prompt: 'three dogs', n: 3 }, '/v1/images');
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ created: expect.any(Number), model: 'test/image-b64', data: Array(3).fill({ url: expect.stringMatching(FILE_URL) }) });
    for (const [i, { url }] of r.json.data.entries()) expect((await getFile(url)).bytes).toEqual(fakeImage(i));
  });

  it('holds and charges the rate of the resolution asked for', async () => {
    const r = await post({ model: 'test/image-b64', prompt: 'big', n: 2, resolution: '2k' });
    const cost = String(2n * nano(RATE_2K));
    expect(r.headers.get('x-gateway-cost')).toBe('0.16');
    expect(await holdOf(r.headers.get('x-gateway-request-id'))).toEqual({ amount: cost, charge: cost, state: 'settled' });
    // The tier from size counts as the resolution asked for.
    const bySize = await post({ model: 'test/image-b64', prompt: 'big', size: '2K' });
    expect(bySize.headers.get('x-gateway-cost')).toBe(RATE_2K);
  });

  it('holds the dearest rate when no resolution is asked, and charges the model rate', async () => {
    const r = await post({ model: 'test/image-b64', prompt: 'any size', n: 2 });
    expect(await holdOf(r.headers.get('x-gateway-request-id'))).toEqual({
      amount: String(2n * nano(RATE_2K)),
      charge: String(2n * nano(RATE)),
      state: 'settled',
    });
  });

  it('charges only the images returned when the upstream makes fewer than n', async () => {
    const r = await post({ model: 'test/image-one', prompt: 'a few', n: 3 });
    expect(r.json.data).toHaveLength(1);
    expect(r.headers.get('x-gateway-cost')).toBe(RATE);
    const requestId = r.headers.get('x-gateway-request-id');
    expect(await holdOf(requestId)).toEqual({ amount: String(3n * nano(RATE)), charge: String(nano(RATE)), state: 'settled' });
    expect(await generationOf(gw, acct.key, requestId)).toMatchObject({ num_media_completion: 1 });
  });

  it('passes unknown fields through and tells the upstream the shape in force', async () => {
    await post({ model: 'test/image-b64', prompt: 'p', size: '1536x1024', style: 'vivid', seed: 7 });
    expect(lastSent()).toEqual({ model: 'images-b64', prompt: 'p', n: 1, size: '1536x1024', style: 'vivid', seed: 7 });
    await post({
      model: 'test/image-b64',
      prompt: 'p',
      size: '1024x1024',
      aspect_ratio: '16:9',
      quality: 'high',
      reference_urls: ['https://x.test/a.png'],
    });
    expect(lastSent()).toEqual({
      model: 'images-b64',
      prompt: 'p',
      n: 1,
      size: '1024x1024',
      aspect_ratio: '16:9',
      resolution: '1024x1024',
      quality: 'high',
      reference_urls: ['https://x.test/a.png'],
    });
  });

  it('serves a simulated model offline', async () => {
    const { data } = await client.images.generate({ model: 'test/image-sim', prompt: 'offline', n: 2 });
    expect(data).toHaveLength(2);
    const [a, b] = await Promise.all((data ?? []).map((d) => getFile(d.url!)));
    expect(a.bytes.subarray(0, 8)).toEqual(PNG_SIGNATURE);
    expect(a.bytes).not.toEqual(b.bytes);
  });

  it.each([
    ['a 5xx', 'test/image-failover'],
    ['a provider kind without images', 'test/image-wrong-kind'],
  ])('fails over on %s and charges only the answering endpoint', async (_why, model) => {
    const r = await post({ model, prompt: 'failover', n: 2 });
    expect(r.status).toBe(200);
    expect(r.json.data).toHaveLength(2);
    const requestId = r.headers.get('x-gateway-request-id');
    expect((await holdOf(requestId)).charge).toBe(String(2n * nano(RATE)));
    expect(await generationOf(gw, acct.key, requestId)).toMatchObject({ attempts: 2, fallback_used: true, status: 'succeeded' });
  });

  it('stops the generation and charges nothing when the client leaves before the images exist', async () => {
    const leaving = new AbortController();
    const prompt = `leave-${mode}`;
    const answer = fetch(`${gw.url}/v1/images/generations`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/image-hang', prompt, n: 2 }),
      signal: leaving.signal,
    }).catch((e) => e);
    const sent = await fake.received((r) => r.body.prompt === prompt, 'the generation');
    leaving.abort();
    expect(await answer).toMatchObject({ name: 'AbortError' });
    const released = await ledgerRow(
      gw,
      'the released hold',
      `SELECT request_id FROM usage_records WHERE account_id = $1 AND error_code = 'client_closed'`,
      [acct.accountId],
    );
    // The gateway's request id travels upstream: the hold released is the one of the request the fake received.
    expect(released.request_id).toBe(sent.headers['x-request-id']);
    await expectReleased(gw, acct.accountId, released.request_id, 'client_closed');
  });

  it('answers 503 when every endpoint fails, releasing the hold', async () => {
    const err = await client.images.generate({ model: 'test/image-all-fail', prompt: 'nope', n: 2 }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(503);
    expect(err.error).toMatchObject({ code: 'upstream_unavailable' });
    expect(JSON.stringify(err.error)).not.toContain(upstreamHost);
    await expectReleased(gw, acct.accountId, err.error.request_id, 'upstream_unavailable');
  });

  it("does not fail over on the upstream's 400: answers 400 and releases the hold", async () => {
    const n = fake.requests.length;
    const r = await post({ model: 'test/image-client-error', prompt: 'bad' });
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('invalid_request');
    expect(fake.requests.length - n).toBe(1);
    await expectReleased(gw, acct.accountId, r.json.error.request_id, 'invalid_request');
  });

  describe('refusals hold nothing and reach no upstream', () => {
    const over = (k: number, make: (i: number) => unknown) => Array.from({ length: k }, (_, i) => make(i));
    it.each([
      ['no model', 400, 'invalid_request', { prompt: 'x' }],
      ['no prompt', 400, 'invalid_request', { model: 'test/image' }],
      ['an empty prompt', 400, 'invalid_request', { model: 'test/image', prompt: '' }],
      ['a prompt over 32,000 characters', 400, 'invalid_request', { model: 'test/image', prompt: 'x'.repeat(32_001) }],
      ['n 0', 400, 'invalid_request', { model: 'test/image', prompt: 'x', n: 0 }],
      ['n 11', 400, 'invalid_request', { model: 'test/image', prompt: 'x', n: 11 }],
      ['a fractional n', 400, 'invalid_request', { model: 'test/image', prompt: 'x', n: 2.5 }],
      ['an empty size', 400, 'invalid_request', { model: 'test/image', prompt: 'x', size: '' }],
      ['a numeric aspect_ratio', 400, 'invalid_request', { model: 'test/image', prompt: 'x', aspect_ratio: 1.77 }],
      ['a resolution of 65 characters', 400, 'invalid_request', { model: 'test/image', prompt: 'x', resolution: '1'.repeat(65) }],
      ['a non-string quality', 400, 'invalid_request', { model: 'test/image', prompt: 'x', quality: 3 }],
      ['a reference URL that is not http(s)', 400, 'invalid_request', { model: 'test/image', prompt: 'x', reference_urls: ['file:///etc/passwd'] }],
      ['17 reference URLs', 400, 'invalid_request', { model: 'test/image', prompt: 'x', reference_urls: over(17, (i) => `https://x.test/${i}.png`) }],
      ['response_format b64_json', 400, 'invalid_request', { model: 'test/image', prompt: 'x', response_format: 'b64_json' }],
      ['stream true', 400, 'invalid_request', { model: 'test/image', prompt: 'x', stream: true }],
      ['a text model', 400, 'invalid_request', { model: 'test/chat', prompt: 'x' }],
      ['an unknown model', 409, 'model_unavailable', { model: 'nobody/nothing', prompt: 'x' }],
      ['a coming_soon model', 409, 'model_unavailable', { model: 'test/image-soon', prompt: 'x' }],
    ])('%s → %i %s', async (_name, status, code, body) => {
      const sent = fake.requests.length;
      const holds = await holdCount(gw, acct.accountId);
      const r = await post(body);
      expect(r.status).toBe(status);
      expect(r.json.error).toMatchObject({ code, request_id: expect.stringMatching(/^req_/) });
      expect(await holdCount(gw, acct.accountId)).toBe(holds);
      expect(fake.requests.length).toBe(sent);
    });

    it('names the category in the wrong-category message, through the openai client too', async () => {
      const err = await client.images.generate({ model: 'test/chat', prompt: 'x' }).catch((e) => e);
      expect(err.status).toBe(400);
      expect(err.error.message).toMatch(/test\/chat is a text model; \/v1\/images\/generations serves image models only/);
    });
  });
});
