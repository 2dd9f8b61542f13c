import { startGateway, type Mode, type TestGateway } from './support/harness';
import { inFreshWindowIfNeeded } from './support/rate-window';

const config = {
  providers: [{ id: 'sim', kind: 'simulated' }],
  models: [
    {
      id: 'cat/chat',
      name: 'Chat',
      description: 'A chat model',
      category: 'text',
      status: 'available',
      context_length: 8192,
      max_output_tokens: 512,
      pricing: { prompt: '0.0000025', completion: '0.00001', request: '0' },
      supported_parameters: ['max_tokens', 'tools'],
      endpoints: [{ provider: 'sim', model: 's' }],
    },
    {
      id: 'cat/next',
      name: 'Next',
      category: 'text',
      status: 'coming_soon',
      context_length: 8192,
      max_output_tokens: 512,
      pricing: { prompt: '0.000001' },
      unit: '1M tokens',
      price: 1,
      endpoints: [{ provider: 'sim', model: 's' }],
    },
    {
      id: 'cat/embed',
      name: 'Embed',
      category: 'embedding',
      status: 'available',
      pricing: { prompt: '0.00000002' },
      endpoints: [{ provider: 'sim', model: 'e' }],
    },
    {
      // Every optional catalogue key given; the three models above give none of them.
      id: 'cat/chat-latest',
      name: 'Chat Latest',
      description: 'Another name for Chat',
      category: 'text',
      status: 'available',
      context_length: 8192,
      max_output_tokens: 512,
      pricing: { prompt: '0.0000025', completion: '0.00001' },
      reference_price: 5,
      speed: 'fast',
      featured: true,
      capabilities: ['chat', 'tools', 'reasoning'],
      added_at: '2025-05-01',
      alias_target: 'cat/chat',
      input_modalities: ['text', 'image'],
      endpoints: [{ provider: 'sim', model: 's' }],
    },
  ],
  limits: { public_rate_limit: { requests: 40, interval: '60s' } },
};

const ISO_TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe.each(['embedded', 'fleet'] as Mode[])('public catalogue routes through the %s gateway', (mode) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(mode, config);
  }, 90_000);
  afterAll(async () => {
    await gw?.stop();
  });
  const get = async (p: string) => {
    const r = await fetch(`${gw.url}${p}`);
    return { status: r.status, headers: r.headers, json: await r.json() };
  };

  it('lists every model with the listing fields, without a key', async () => {
    const { status, json, headers } = await get('/v1/models');
    expect(status).toBe(200);
    expect(headers.get('cache-control')).toMatch(/max-age/);
    expect(json.data).toHaveLength(4);
    expect(json.data[0]).toEqual({
      id: 'cat/chat',
      canonical_slug: 'cat/chat',
      name: 'Chat',
      description: 'A chat model',
      category: 'text',
      status: 'available',
      unit: '1M tokens',
      price: 2.5,
      context_length: 8192,
      pricing: {
        prompt: '0.0000025',
        completion: '0.00001',
        request: '0',
        image: null,
        character: null,
        second: null,
        input_cache_read: null,
        input_cache_write: null,
      },
      supported_parameters: ['max_tokens', 'tools'],
    });
    expect(json.data[1]).toMatchObject({ id: 'cat/next', status: 'coming_soon', unit: '1M tokens', price: 1 });
    expect(json.data[2].context_length).toBeUndefined(); // text models only
    expect((await get('/v1/models/user')).json).toEqual(json);
  });

  it('counts available models only', async () => {
    expect((await get('/v1/models/count')).json).toEqual({ data: { count: 3 } });
  });

  it('describes one model, and answers 404 model_unavailable for an unknown slug', async () => {
    const { json } = await get('/v1/model/cat/chat');
    expect(json.data).toMatchObject({
      id: 'cat/chat',
      architecture: { modality: 'text->text', input_modalities: ['text'], output_modalities: ['text'], tokenizer: 'o200k_base', instruct_type: null },
      alias_target: null,
      reasoning: { supported: false },
      discount: 0,
    });
    const alias = await get('/v1/model/cat/chat-latest');
    expect(alias.headers.get('cache-control')).toBe('public, max-age=60');
    expect(alias.json.data).toMatchObject({
      architecture: { modality: 'text+image->text', input_modalities: ['text', 'image'], output_modalities: ['text'] },
      alias_target: 'cat/chat',
      reasoning: { supported: true },
      discount: 0.5,
    });
    const missing = await get('/v1/model/cat/nothing');
    expect(missing.status).toBe(404);
    expect(missing.json.error).toMatchObject({ code: 'model_unavailable', request_id: expect.stringMatching(/^req_/) });
  });

  it('/v1/catalog lists every model in camelCase, every field from the config, without a key', async () => {
    const before = Date.now();
    const { status, json, headers } = await get('/v1/catalog');
    expect(status).toBe(200);
    expect(headers.get('cache-control')).toBe('public, max-age=60');
    expect(headers.get('x-ratelimit-limit')).toBe('40'); // metered per client address like every public route
    expect(Object.keys(json)).toEqual(['data', 'generatedAt']);
    expect(json.generatedAt).toMatch(ISO_TIMESTAMP);
    expect(Date.parse(json.generatedAt)).toBeLessThanOrEqual(before); // built when the gateway started, not per request
    expect(json.data.map((i: { id: string }) => i.id)).toEqual(['cat/chat', 'cat/next', 'cat/embed', 'cat/chat-latest']);
    expect(json.data[0]).toEqual({
      id: 'cat/chat',
      slug: 'chat',
      name: 'Chat',
      description: 'A chat model',
      category: 'text',
      status: 'available',
      unit: '1M tokens',
      price: 2.5,
      reference: 2.5,
      speed: '',
      featured: false,
      capabilities: ['chat', 'tools'],
      contextLength: 8192,
      // Without added_at: when the model first appeared, recorded as this gateway started.
      addedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    expect(json.data[2]).toMatchObject({
      id: 'cat/embed',
      description: '',
      capabilities: ['embeddings'],
      contextLength: null,
      addedAt: json.data[0].addedAt,
    });
    expect(json.data[3]).toEqual({
      id: 'cat/chat-latest',
      slug: 'chat-latest',
      name: 'Chat Latest',
      description: 'Another name for Chat',
      category: 'text',
      status: 'available',
      unit: '1M tokens',
      price: 2.5,
      reference: 5,
      speed: 'fast',
      featured: true,
      capabilities: ['chat', 'tools', 'reasoning'],
      contextLength: 8192,
      addedAt: '2025-05-01T00:00:00.000Z',
    });
    const again = await get('/v1/catalog');
    expect(again.json.generatedAt).toBe(json.generatedAt);
  });

  it('narrows listings per category with total_count, without canonical_slug or context_length', async () => {
    const { json } = await get('/v1/embeddings/models');
    expect(json.total_count).toBe(1);
    expect(json.data[0].id).toBe('cat/embed');
    expect(json.data[0].canonical_slug).toBeUndefined();
    expect((await get('/v1/images/models')).json).toEqual({ data: [], total_count: 0 });
    expect((await get('/v1/videos/models')).json).toEqual({ data: [], total_count: 0 });
  });

  it('meters public routes per client address: rate headers, then 429 with Retry-After', async () => {
    let last = await get('/v1/models/count');
    expect(last.headers.get('x-ratelimit-limit')).toBe('40');
    expect(last.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
    await inFreshWindowIfNeeded();
    for (let i = 0; i < 45 && last.status === 200; i++) last = await get('/v1/models/count');
    expect(last.status).toBe(429);
    expect(last.json.error.code).toBe('rate_limited');
    expect(last.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(last.headers.get('x-gateway-limit-type')).toBe('requests');
  }, 40_000);
});
