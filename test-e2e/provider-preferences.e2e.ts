import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { jobsClient } from './support/jobs';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { TEXT_PRICE } from './support/config';
import { textCost } from './support/money';
import {
  type Mode,
  type TestGateway,
  EVENTS_FLEET,
  closedHold,
  generationOf,
  holdCount,
  settled,
  usageRecord,
  useGatewaySuite,
} from './support/harness';

const modes: Mode[] = ['embedded', EVENTS_FLEET];
const PROVIDERS = ['east', 'west', 'north'] as const;
/** Two simulated providers, for the categories the OpenAI fakes do not serve (rerank, the job queue). */
const SIMULATED = ['sim-a', 'sim-b'] as const;

/**
 * Three providers, each its own fake upstream, so a test sees which one a call reached. Every model lists them
 * east, west, north; a failing behaviour has an endpoint of its own, so no test opens a circuit another relies on.
 */
function preferencesConfig(urls: string[]) {
  const endpoints = (models: string[]) => models.map((model, i) => ({ provider: PROVIDERS[i], model }));
  const text = { category: 'text', status: 'available', context_length: 4096, max_output_tokens: 100, pricing: TEXT_PRICE };
  const media = (id: string, category: string, pricing: Record<string, string>, endpoints: Array<{ provider: string; model: string }>) => ({
    id,
    name: id,
    category,
    status: 'available',
    pricing,
    endpoints,
  });
  const simulated = (model: string) => SIMULATED.map((provider) => ({ provider, model }));
  return {
    providers: [
      ...PROVIDERS.map((id, i) => ({ id, kind: 'openai', base_url: urls[i], timeout_ms: 10_000 })),
      ...SIMULATED.map((id) => ({ id, kind: 'simulated' })),
    ],
    models: [
      { id: 'pp/chat', name: 'chat', ...text, endpoints: endpoints(['ok', 'ok', 'ok']) },
      { id: 'pp/east-fails', name: 'east fails', ...text, endpoints: endpoints(['status-503', 'ok']) },
      { id: 'pp/latency', name: 'operator latency', ...text, routing: 'lowest_latency', endpoints: endpoints(['ok', 'ok']) },
      {
        id: 'pp/weighted',
        name: 'operator weights',
        ...text,
        routing: 'weighted',
        endpoints: endpoints(['ok', 'ok']).map((e, i) => ({ ...e, weight: i + 1 })),
      },
      {
        id: 'pp/embed',
        name: 'embed',
        category: 'embedding',
        status: 'available',
        pricing: { prompt: '0.001' },
        endpoints: endpoints(['e', 'e', 'e']),
      },
      {
        id: 'pp/image',
        name: 'image',
        category: 'image',
        status: 'available',
        pricing: { image: '0.04' },
        endpoints: endpoints(['images-b64', 'images-b64']),
      },
      // The routes of the other categories, each with two endpoints a preference chooses between.
      media('pp/rerank', 'rerank', { prompt: '0.001' }, simulated('sim-rerank')),
      media('pp/video', 'video', { second: '0.01' }, simulated('sim-video')),
      media('pp/speech', 'audio', { character: '0.001' }, endpoints(['speech-ok', 'speech-ok'])),
      media('pp/stt', 'audio', { second: '0.001' }, endpoints(['stt-ok', 'stt-ok'])),
    ],
  };
}

describe.each(modes)('provider preferences through the %s gateway', (mode) => {
  let fakes: FakeUpstream[];
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let client: OpenAI;

  useGatewaySuite(
    mode,
    { upstreams: () => Promise.all(PROVIDERS.map(() => startFakeOpenAI())), config: (f) => preferencesConfig(f.map((u) => u.url)), credits: 50 },
    (s) => {
      ({ upstreams: fakes, gw, acct } = s);
      client = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    },
  );

  /** How many requests each provider's upstream has received so far, by provider id. */
  const calls = () => Object.fromEntries(PROVIDERS.map((p, i) => [p, fakes[i].requests.length]));
  const callsSince = (before: Record<string, number>) => Object.fromEntries(PROVIDERS.map((p, i) => [p, fakes[i].requests.length - before[p]]));
  /** `provider` is no field of the openai client's types: it travels as an extra body field, as OpenRouter's docs show. */
  const chat = (model: string, provider: unknown) =>
    client.chat.completions
      .create({ model, messages: [{ role: 'user', content: 'ping' }], provider } as OpenAI.ChatCompletionCreateParamsNonStreaming)
      .withResponse();
  const available = async () =>
    (await (await fetch(`${gw.url}/v1/credits`, { headers: { authorization: `Bearer ${acct.key}` } })).json()).data.available as number;

  it('order: the named provider serves first, the generation record names it, and the upstream never sees `provider`', async () => {
    const before = calls();
    const { data, response } = await chat('pp/chat', { order: ['typo', 'north', 'west'] });
    expect(data.choices[0].message.content).toBe('pong');
    expect(callsSince(before)).toEqual({ east: 0, west: 0, north: 1 });
    expect(fakes[2].requests.at(-1)!.body.provider).toBeUndefined();
    const requestId = response.headers.get('x-gateway-request-id');
    expect(await closedHold(gw, acct.accountId, requestId)).toMatchObject({ state: 'settled', charge: textCost(TEXT_PRICE, 3, 1).toString() });
    expect(await generationOf(gw, acct.key, requestId)).toMatchObject({ provider: 'north', attempts: 1, fallback_used: false });
  });

  it('only and ignore: the call goes where they leave it, streamed too', async () => {
    let before = calls();
    await chat('pp/chat', { only: ['west', 'north'], ignore: ['north'] });
    expect(callsSince(before)).toEqual({ east: 0, west: 1, north: 0 });

    before = calls();
    const stream = await client.chat.completions.create({
      model: 'pp/chat',
      messages: [{ role: 'user', content: 'ping' }],
      stream: true,
      provider: { ignore: ['east', 'west'] },
    } as OpenAI.ChatCompletionCreateParamsStreaming);
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(text).toBe('pong');
    expect(callsSince(before)).toEqual({ east: 0, west: 0, north: 1 });
  });

  it('allow_fallbacks false: one attempt on the first allowed endpoint, its failure is the answer; by default the next one serves', async () => {
    let before = calls();
    const err = await chat('pp/east-fails', { allow_fallbacks: false }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(503);
    expect(err.error).toMatchObject({ code: 'upstream_unavailable' });
    expect(callsSince(before)).toEqual({ east: 1, west: 0, north: 0 });
    expect(await usageRecord(gw, acct.accountId, err.error.request_id)).toMatchObject({ status: 'failed', attempts: 1, cost: '0' });
    expect((await generationOf(gw, acct.key, err.error.request_id)).provider).toBeNull();

    before = calls();
    const { response } = await chat('pp/east-fails', {});
    expect(callsSince(before)).toEqual({ east: 1, west: 1, north: 0 });
    // The record is written when billing applies the settle, which travels over the bus after the answer.
    await settled(gw, acct.accountId);
    expect(await generationOf(gw, acct.key, response.headers.get('x-gateway-request-id'))).toMatchObject({
      provider: 'west',
      attempts: 2,
      fallback_used: true,
    });
  });

  it('answers 400 invalid_request naming it when the preferences exclude every endpoint, before any hold or call', async () => {
    const holds = await holdCount(gw, acct.accountId);
    const before = calls();
    const err = await chat('pp/chat', { only: ['esat'] }).catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({
      code: 'invalid_request',
      message: 'Invalid request: provider: no endpoint is left: provider.only/ignore exclude every provider of pp/chat (east, west, north)',
    });
    const ignored = await chat('pp/chat', { ignore: ['east', 'west', 'north'] }).catch((e) => e);
    expect(ignored.status).toBe(400);
    expect(ignored.error.message).toContain('provider.only/ignore exclude every provider of pp/chat');
    expect(callsSince(before)).toEqual({ east: 0, west: 0, north: 0 });
    expect(await holdCount(gw, acct.accountId)).toBe(holds);
  });

  it.each([
    ['an unknown sort', { sort: 'price' }, 'provider.sort'],
    ['a field it does not honour', { data_collection: 'deny' }, 'data_collection'],
    ['an empty only', { only: [] }, 'provider.only: name at least one provider'],
    ['a negative price', { max_price: { prompt: -1 } }, 'provider.max_price.prompt'],
    ['a string', 'east', 'provider must be an object'],
  ])('refuses %s with 400 invalid_request', async (_name, provider, message) => {
    const err = await chat('pp/chat', provider).catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error.code).toBe('invalid_request');
    expect(err.error.message).toContain(message);
  });

  it('max_price: a model priced above it is refused before any hold, the balance untouched; at its price it serves', async () => {
    const holds = await holdCount(gw, acct.accountId);
    const balance = await available();
    const before = calls();
    const err = await chat('pp/chat', { max_price: { prompt: 0.0005, completion: '1' } }).catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({
      code: 'invalid_request',
      message: 'Invalid request: provider: no endpoint is left: pp/chat is priced above provider.max_price (prompt 0.001 > 0.0005)',
    });
    expect(await holdCount(gw, acct.accountId)).toBe(holds);
    expect(await available()).toBe(balance);
    expect(callsSince(before)).toEqual({ east: 0, west: 0, north: 0 });

    const { data } = await chat('pp/chat', { max_price: { prompt: 0.001, completion: '0.002', request: 0 } });
    expect(data.choices[0].message.content).toBe('pong');
  });

  it('sort latency and throughput, and the operator strategies, all serve from an allowed provider', async () => {
    for (const sort of ['latency', 'throughput']) {
      const before = calls();
      await chat('pp/chat', { sort, ignore: ['east'] });
      const since = callsSince(before);
      expect(since.east).toBe(0);
      expect(since.west + since.north).toBe(1);
    }
    for (const model of ['pp/latency', 'pp/weighted']) {
      const before = calls();
      const { data } = await chat(model, { only: ['west'] });
      expect(data.choices[0].message.content).toBe('pong');
      expect(callsSince(before)).toEqual({ east: 0, west: 1, north: 0 });
    }
  });

  it('embeddings honour the preferences and never forward them', async () => {
    const before = calls();
    const res = await client.embeddings.create({ model: 'pp/embed', input: 'hello', provider: { order: ['north'] } } as OpenAI.EmbeddingCreateParams);
    expect(res.data).toHaveLength(1);
    expect(callsSince(before)).toEqual({ east: 0, west: 0, north: 1 });
    expect(fakes[2].requests.at(-1)!.body.provider).toBeUndefined();
    const err = await client.embeddings
      .create({ model: 'pp/embed', input: 'hello', provider: { only: ['nowhere'] } } as OpenAI.EmbeddingCreateParams)
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error.message).toContain('exclude every provider of pp/embed');
  });

  it('images honour the preferences, and max_price image refuses a dearer model with nothing held', async () => {
    const before = calls();
    const { data } = await client.images.generate({
      model: 'pp/image',
      prompt: 'a cat',
      provider: { only: ['west'] },
    } as OpenAI.ImageGenerateParamsNonStreaming);
    expect(data).toHaveLength(1);
    expect(callsSince(before)).toEqual({ east: 0, west: 1, north: 0 });
    expect(fakes[1].requests.at(-1)!.body.provider).toBeUndefined();

    const holds = await holdCount(gw, acct.accountId);
    const err = await client.images
      .generate({ model: 'pp/image', prompt: 'a cat', provider: { max_price: { image: '0.03' } } } as OpenAI.ImageGenerateParamsNonStreaming)
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error.message).toBe('Invalid request: provider: no endpoint is left: pp/image is priced above provider.max_price (image 0.04 > 0.03)');
    expect(await holdCount(gw, acct.accountId)).toBe(holds);
  });

  it('the generation record names the provider that served a rerank, a speech, a transcription and a queue job', async () => {
    const post = (route: string, body: unknown) =>
      fetch(`${gw.url}${route}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const servedBy = async (r: Response) => {
      expect(r.status).toBeLessThan(300);
      await r.arrayBuffer();
      await settled(gw, acct.accountId);
      return (await generationOf(gw, acct.key, r.headers.get('x-gateway-request-id'))).provider;
    };

    expect(await servedBy(await post('/v1/rerank', { model: 'pp/rerank', query: 'q', documents: ['a', 'b'], provider: { order: ['sim-b'] } }))).toBe(
      'sim-b',
    );

    const before = calls();
    const speech = await client.audio.speech
      .create({
        model: 'pp/speech',
        input: 'hello',
        voice: 'alloy',
        response_format: 'wav',
        provider: { ignore: ['east'] },
      } as OpenAI.Audio.SpeechCreateParams)
      .withResponse();
    expect(await servedBy(speech.response)).toBe('west');

    const mp3 = fs.readFileSync(path.join(__dirname, '../services/media/src/transcriptions/fixtures/silence-1.5s.mp3')).toString('base64');
    const stt = await post('/v1/audio/transcriptions', { model: 'pp/stt', input_audio: { data: mp3, format: 'mp3' }, provider: { order: ['west'] } });
    expect(await servedBy(stt)).toBe('west');
    expect(callsSince(before)).toEqual({ east: 0, west: 2, north: 0 });

    // A job is answered by the worker, which resumes the hold (and its preferences) after the submit.
    const jobs = jobsClient(
      () => gw.url,
      () => acct.key,
    );
    const sub = await jobs.submit({ model: 'pp/video', prompt: 'a lighthouse', duration: 1, provider: { order: ['sim-b'] } }, { queue: true });
    expect(sub.status).toBe(200);
    await jobs.untilCompleted(sub.json.request_id);
    await settled(gw, acct.accountId);
    expect(await generationOf(gw, acct.key, sub.headers.get('x-gateway-request-id'))).toMatchObject({ model: 'pp/video', provider: 'sim-b' });
  });
});
