import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI, { toFile } from 'openai';
import { mp3FrameAt, mp3Frames, wavHeader } from '@gateway/upstreams/testing';
import { parseConfig, readEnv } from '@gateway/config';
import { startEmbedded } from '@gateway/gateway';
import { createLogger } from '@gateway/service-kit';
import { waitFor } from '@gateway/testing';
import { expectReleased, generationOf, holdCount, type Mode, pickPort, settled, type TestGateway, useGatewaySuite } from './support/harness';

/**
 * The fixes of the contract audit (issue 38), over one catalogue of simulated models, one of each category, so each
 * route can be asked with a model of another one. Nothing here reaches a network upstream.
 */
const modes: Mode[] = ['embedded', 'fleet'];

export function auditConfig() {
  const model = (id: string, category: string, pricing: Record<string, string>, extra: Record<string, unknown> = {}) => ({
    id,
    name: id,
    category,
    status: 'available',
    pricing,
    endpoints: [{ provider: 'sim', model: `sim-${category}` }],
    ...extra,
  });
  return {
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [
      model('test/chat', 'text', { prompt: '0.001', completion: '0.002' }, { context_length: 4096, max_output_tokens: 20 }),
      model('test/embed', 'embedding', { prompt: '0.001' }),
      model('test/rerank', 'rerank', { prompt: '0.001' }),
      model('test/image', 'image', { image: '0.04' }),
      model('test/speech', 'audio', { character: '0.000015123456789' }),
      model('test/stt', 'audio', { second: '0.0001' }),
      model('test/video', 'video', { second: '0.05' }),
      model('test/dated', 'embedding', { prompt: '0.001' }, { added_at: '2025-05-01' }),
    ],
    // Small enough that the tests can pass it.
    limits: { max_audio_body: '256kb' },
  };
}

/** `seconds` of 8 kHz mono 16-bit silence as a WAV file: 16,000 bytes a second. */
function wav(seconds: number): Buffer {
  const data = Buffer.alloc(seconds * 16_000);
  return Buffer.concat([wavHeader(8000, 1, data.length), data]);
}

/** A multipart body by hand, for what no client would send. */
function multipart(parts: Array<{ name: string; value: string | Buffer; filename?: string; type?: string }>, boundary = 'audit-boundary') {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`));
    chunks.push(Buffer.isBuffer(p.value) ? p.value : Buffer.from(p.value));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

/** Nothing to start: the simulated provider is built in. */
const noUpstream = async () => ({ close: async () => {} });

describe.each(modes)('contract audit fixes through the %s gateway', (mode) => {
  const suiteStart = new Date();
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let client: OpenAI;

  useGatewaySuite(mode, { upstreams: noUpstream, config: auditConfig, credits: 20 }, (s) => {
    ({ gw, acct } = s);
    client = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });

  const get = async (path: string) => {
    const r = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${acct.key}` } });
    return { status: r.status, json: await r.json() };
  };
  const post = (path: string, body: unknown) =>
    fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  describe('a model of another category: 400 invalid_request on every route, before any hold', () => {
    const msgs = [{ role: 'user', content: 'hi' }];
    it.each([
      ['/v1/chat/completions', { model: 'test/embed', messages: msgs }, 'embedding', 'text'],
      ['/v1/chat/completions', { model: 'test/chat', models: ['test/image'], messages: msgs }, 'image', 'text'],
      ['/v1/completions', { model: 'test/rerank', prompt: 'hi' }, 'rerank', 'text'],
      ['/v1/messages', { model: 'test/video', messages: msgs, max_tokens: 5 }, 'video', 'text'],
      ['/v1/responses', { model: 'test/speech', input: 'hi' }, 'audio', 'text'],
      ['/v1/embeddings', { model: 'test/chat', input: 'hi' }, 'text', 'embedding'],
      ['/v1/rerank', { model: 'test/embed', query: 'q', documents: ['d'] }, 'embedding', 'rerank'],
      ['/v1/images/generations', { model: 'test/video', prompt: 'p' }, 'video', 'image'],
      ['/v1/audio/speech', { model: 'test/chat', input: 'hi' }, 'text', 'audio'],
      ['/v1/videos', { model: 'test/image', prompt: 'p' }, 'image', 'video'],
    ])('POST %s naming a model of another category', async (path, body, category, serves) => {
      const before = await holdCount(gw, acct.accountId);
      const r = await post(path, body);
      expect(r.status).toBe(400);
      const named = (body as { models?: string[] }).models?.[0] ?? (body as { model: string }).model;
      expect((await r.json()).error).toEqual({
        code: 'invalid_request',
        message: `Model ${named} is ${/^[aeiou]/.test(category) ? 'an' : 'a'} ${category} model; ${path} serves ${serves} models only`,
        request_id: expect.stringMatching(/^req_/),
      });
      expect(await holdCount(gw, acct.accountId)).toBe(before);
    });

    it('the queue route answers the same, naming its path', async () => {
      const r = await post('/v1/queue/test/chat', { prompt: 'p' });
      expect(r.status).toBe(400);
      expect((await r.json()).error).toMatchObject({
        code: 'invalid_request',
        message: 'Model test/chat is a text model; /v1/queue/test/chat serves video models only',
      });
    });

    it('the official openai client gets a BadRequestError on chat and on embeddings alike', async () => {
      const before = await holdCount(gw, acct.accountId);
      const chat = await client.chat.completions.create({ model: 'test/embed', messages: [{ role: 'user', content: 'hi' }] }).catch((e) => e);
      expect(chat).toBeInstanceOf(OpenAI.BadRequestError);
      expect(chat.error).toMatchObject({ code: 'invalid_request' });
      const embed = await client.embeddings.create({ model: 'test/chat', input: 'hi' }).catch((e) => e);
      expect(embed).toBeInstanceOf(OpenAI.BadRequestError);
      expect(embed.error).toMatchObject({ code: 'invalid_request' });
      expect(await holdCount(gw, acct.accountId)).toBe(before);
    });

    it('an unknown slug stays 409 model_unavailable', async () => {
      const r = await post('/v1/chat/completions', { model: 'nobody/nothing', messages: msgs });
      expect(r.status).toBe(409);
      expect((await r.json()).error).toMatchObject({ code: 'model_unavailable' });
    });
  });

  describe('GET /v1/jobs speaks the wire vocabulary of every other job body', () => {
    let done: string;
    let failed: string;
    const ids = async (query: string) => {
      const r = await get(`/v1/jobs?model=test/video${query}`);
      expect(r.status).toBe(200);
      return (r.json.data as Array<{ request_id: string }>).map((row) => row.request_id);
    };

    beforeAll(async () => {
      const submit = async (prompt: string) => (await (await post('/v1/videos', { model: 'test/video', prompt, duration: 1 })).json()).request_id;
      done = await submit('waves');
      // The simulator's marker: the job fails at its result, deterministically.
      failed = await submit('waves [[fail]]');
      for (const id of [done, failed]) {
        await waitFor(async () => (await get(`/v1/queue/requests/${id}/status`)).json.status === 'COMPLETED', `job ${id} to finish`, 20_000);
      }
    });

    it('a row shows COMPLETED as status, as the job status route does, and the stored terminal status as outcome', async () => {
      const rows = (await get('/v1/jobs?model=test/video')).json.data as Array<Record<string, unknown>>;
      const row = (id: string) => rows.find((r) => r.request_id === id);
      expect(row(done)).toMatchObject({ status: 'COMPLETED', outcome: 'succeeded', queue_position: null });
      expect(row(failed)).toMatchObject({ status: 'COMPLETED', outcome: 'failed', queue_position: null });
      expect((await get(`/v1/queue/requests/${done}/status`)).json).toMatchObject({ status: 'COMPLETED', outcome: 'succeeded' });
      expect((await get(`/v1/queue/requests/${failed}/status`)).json).toMatchObject({ status: 'COMPLETED', outcome: 'failed' });
    });

    it('filters on the stored vocabulary (the contract) and on the wire one', async () => {
      expect(await ids('&status=succeeded')).toEqual([done]);
      expect(await ids('&status=failed')).toEqual([failed]);
      expect(await ids('&status=COMPLETED')).toEqual([failed, done]);
      expect(await ids('&status=canceled')).toEqual([]);
      expect(await ids('&status=IN_QUEUE')).toEqual([]);
      expect(await ids('&status=IN_PROGRESS')).toEqual([]);
    });

    it('a status in neither vocabulary is 400 invalid_request naming the field', async () => {
      const r = await get('/v1/jobs?status=completed');
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('invalid_request');
      expect(r.json.error.message).toMatch(/status/);
    });
  });

  describe('a body the gateway cannot take is refused with a message that says what is wrong', () => {
    const raw = (path: string, body: string | undefined, headers: Record<string, string>) =>
      fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${acct.key}`, ...headers }, body });
    const json = { 'content-type': 'application/json' };

    it.each([
      ['a JSON string', '/v1/chat/completions', '"hello"', json, 'Request body must be a JSON object; this one is a string'],
      ['a JSON number', '/v1/embeddings', '12', json, 'Request body must be a JSON object; this one is a number'],
      [
        'a JSON object sent as text/plain',
        '/v1/chat/completions',
        JSON.stringify({ model: 'test/chat', messages: [{ role: 'user', content: 'hi' }] }),
        { 'content-type': 'text/plain' },
        'Request body must be JSON, sent with Content-Type: application/json (this one has Content-Type text/plain)',
      ],
      [
        'a JSON object sent as text/plain to the queue',
        '/v1/videos',
        JSON.stringify({ model: 'test/video', prompt: 'p' }),
        { 'content-type': 'text/plain' },
        'Request body must be JSON, sent with Content-Type: application/json (this one has Content-Type text/plain)',
      ],
      ['no body', '/v1/images/generations', undefined, {}, 'Request body is missing: send a JSON object with Content-Type: application/json'],
      [
        'a string `models`',
        '/v1/chat/completions',
        JSON.stringify({ model: 'test/chat', models: 'test/chat-and-more', messages: [{ role: 'user', content: 'hi' }] }),
        json,
        'Invalid request: models: Invalid input: expected array, received string',
      ],
      ['still: broken JSON', '/v1/chat/completions', '{"model": ', json, 'Request body is not valid JSON'],
    ])('%s', async (_what, path, body, headers, message) => {
      const before = await holdCount(gw, acct.accountId);
      const r = await raw(path, body, headers);
      expect(r.status).toBe(400);
      expect((await r.json()).error).toEqual({ code: 'invalid_request', message, request_id: expect.stringMatching(/^req_/) });
      expect(await holdCount(gw, acct.accountId)).toBe(before);
    });

    it('the official openai client still gets its answer (JSON, application/json)', async () => {
      const reply = await client.chat.completions.create({ model: 'test/chat', messages: [{ role: 'user', content: 'hi' }] });
      expect(reply.choices[0].message.content).toMatch(/simulated reply/);
    });
  });

  describe('POST /v1/audio/transcriptions takes a multipart upload, as the official openai client sends it', () => {
    // 0.0001 USD a second, per started second: 3 s of audio = 0.0003 USD.
    it('audio.transcriptions.create({ file }) answers, measured and charged per second, exactly', async () => {
      const before = await holdCount(gw, acct.accountId);
      const { data, response } = await client.audio.transcriptions
        .create({ model: 'test/stt', file: await toFile(wav(3), 'clip.wav') })
        .withResponse();
      expect(data.text).toMatch(/^This is a simulated transcription by sim-audio \([0-9a-f]{8}\) of 48044 bytes of audio\.$/);
      expect(response.headers.get('x-gateway-cost')).toBe('0.0003');
      await settled(gw, acct.accountId);
      const gen = await generationOf(gw, acct.key, response.headers.get('x-gateway-request-id'));
      expect(gen).toMatchObject({ model: 'test/stt', status: 'succeeded', cost: '0.0003', usage_estimated: true });
      expect(await holdCount(gw, acct.accountId)).toBe(before + 1);
    });

    it('takes the options as fields: response_format text, language', async () => {
      const text = await client.audio.transcriptions.create({
        model: 'test/stt',
        file: await toFile(wav(1), 'clip.WAV', { type: 'audio/wav' }),
        response_format: 'text',
        language: 'de',
      });
      expect(text).toMatch(/^This is a simulated transcription by sim-audio .* of 16044 bytes of audio\.\n?$/);
    });

    it('the JSON body of the contract still answers the same', async () => {
      const r = await post('/v1/audio/transcriptions', { model: 'test/stt', input_audio: { data: wav(1).toString('base64'), format: 'wav' } });
      expect(r.status).toBe(200);
      expect((await r.json()).text).toMatch(/of 16044 bytes of audio\.$/);
    });

    const send = (m: { body: Buffer; type: string }) =>
      fetch(`${gw.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${acct.key}`, 'content-type': m.type },
        body: new Uint8Array(m.body),
      });
    const file = (data: Buffer = wav(1), filename = 'clip.wav') => ({ name: 'file', value: data, filename, type: 'application/octet-stream' });

    it.each([
      ['no file', 400, [{ name: 'model', value: 'test/stt' }], /file: required: the recording, as a file part named "file"/],
      [
        'the file under another name',
        400,
        [
          { name: 'model', value: 'test/stt' },
          { ...file(), name: 'audio' },
        ],
        /file: required/,
      ],
      ['no model', 400, [file()], /model: /],
      ['an empty file', 400, [{ name: 'model', value: 'test/stt' }, file(Buffer.alloc(0))], /file\.data: must not be empty/],
      [
        'a container the gateway cannot measure',
        400,
        [{ name: 'model', value: 'test/stt' }, file(wav(1), 'clip.aiff')],
        /file\.format: must be one of wav/,
      ],
      [
        'two files',
        400,
        [{ name: 'model', value: 'test/stt' }, file(), { ...file(), name: 'file2' }],
        /The multipart upload could not be read: it holds more than one file/,
      ],
      ['a model of another category', 400, [{ name: 'model', value: 'test/chat' }, file()], /test\/chat is a text model/],
      [
        'granularities without verbose_json',
        400,
        [{ name: 'model', value: 'test/stt' }, { name: 'timestamp_granularities[]', value: 'word' }, file()],
        /verbose_json/,
      ],
      ['a file over max_audio_body', 413, [{ name: 'model', value: 'test/stt' }, file(wav(17))], /too large/],
      [
        'audio that is not what its name says',
        400,
        [{ name: 'model', value: 'test/stt' }, file(Buffer.from('not audio at all'))],
        /^Invalid request: file: the data is not wav audio/,
      ],
    ])('%s → %i invalid_request, nothing held', async (_what, status, parts, message) => {
      const before = await holdCount(gw, acct.accountId);
      const r = await send(multipart(parts as Parameters<typeof multipart>[0]));
      expect(r.status).toBe(status);
      const { error } = await r.json();
      expect(error).toMatchObject({ code: 'invalid_request', request_id: expect.stringMatching(/^req_/) });
      expect(error.message).toMatch(message);
      expect(await holdCount(gw, acct.accountId)).toBe(before);
    });

    it('an upload past max_audio_body sent without a length (chunked) is 413 as it arrives, and the next request is answered', async () => {
      const before = await holdCount(gw, acct.accountId);
      const big = multipart([{ name: 'model', value: 'test/stt' }, file(wav(20))]);
      const pieces = Array.from({ length: Math.ceil(big.body.length / 16_384) }, (_, i) => big.body.subarray(i * 16_384, (i + 1) * 16_384));
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          const next = pieces.shift();
          if (next) controller.enqueue(new Uint8Array(next));
          else controller.close();
        },
      });
      const r = await fetch(`${gw.url}/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${acct.key}`, 'content-type': big.type },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      expect(r.status).toBe(413);
      expect((await r.json()).error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/too large/) });
      expect(await holdCount(gw, acct.accountId)).toBe(before);
      const after = await send(multipart([{ name: 'model', value: 'test/stt' }, file()]));
      expect(after.status).toBe(200);
    });

    it('a multipart body that breaks off mid-part is 400 invalid_request, nothing held', async () => {
      const before = await holdCount(gw, acct.accountId);
      const whole = multipart([{ name: 'model', value: 'test/stt' }, file()]);
      const r = await send({ body: whole.body.subarray(0, 200), type: whole.type });
      expect(r.status).toBe(400);
      expect((await r.json()).error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/multipart upload could not be read/) });
      expect(await holdCount(gw, acct.accountId)).toBe(before);
    });
  });

  describe('the simulated transcription answers verbose_json with segments and words, as OpenAI shapes them', () => {
    it('timestamp_granularities word and segment through the official client', async () => {
      const v = await client.audio.transcriptions.create({
        model: 'test/stt',
        file: await toFile(wav(4), 'clip.wav'),
        response_format: 'verbose_json',
        timestamp_granularities: ['word', 'segment'],
      });
      expect(v).toMatchObject({ task: 'transcribe', language: 'english', duration: 4 });
      expect(v.text).toMatch(/^This is a simulated transcription/);
      expect(v.words?.map((w) => w.word).join(' ')).toBe(v.text);
      expect(v.words?.[0].start).toBe(0);
      expect(v.words?.at(-1)?.end).toBe(4);
      expect(v.segments?.map((seg) => seg.text).join('')).toBe(` ${v.text}`);
      expect(v.segments?.[0]).toEqual({
        id: 0,
        seek: 0,
        start: 0,
        end: expect.any(Number),
        text: expect.any(String),
        tokens: [],
        temperature: 0,
        avg_logprob: 0,
        compression_ratio: 1,
        no_speech_prob: 0,
      });
    });

    it('segments alone by default; words alone when only they are asked; the JSON body alike', async () => {
      const byDefault = await client.audio.transcriptions.create({
        model: 'test/stt',
        file: await toFile(wav(2), 'a.wav'),
        response_format: 'verbose_json',
      });
      expect(byDefault.segments?.length).toBeGreaterThan(0);
      expect(byDefault.words).toBeUndefined();
      const r = await post('/v1/audio/transcriptions', {
        model: 'test/stt',
        input_audio: { data: wav(2).toString('base64'), format: 'wav' },
        response_format: 'verbose_json',
        timestamp_granularities: ['word'],
      });
      expect(r.status).toBe(200);
      const words = await r.json();
      expect(words.segments).toBeUndefined();
      expect(words.words.at(-1).end).toBe(2);
      // The simulator's figure is the gateway's own measure: charged on it, and the record says it was estimated.
      expect(r.headers.get('x-gateway-cost')).toBe('0.0002');
      await settled(gw, acct.accountId);
      expect(await generationOf(gw, acct.key, r.headers.get('x-gateway-request-id'))).toMatchObject({ usage_estimated: true, cost: '0.0002' });
    });
  });

  describe('the simulated speech answers the contract default, mp3, as real MP3', () => {
    // 0.000015123456789 USD a character.
    it('a first call with defaults through the official client: MP3 frames from the first byte to the last, charged exactly', async () => {
      const input = 'Hello from the demo voice';
      const { data, response } = await client.audio.speech.create({ model: 'test/speech', input, voice: 'alloy' }).withResponse();
      expect(response.headers.get('content-type')).toBe('audio/mpeg');
      // 25 characters × 0.000015123456789 = 0.000378086419725 USD, rounded once to nano-USD.
      expect(response.headers.get('x-gateway-cost')).toBe('0.000378086');
      const mp3 = Buffer.from(await data.arrayBuffer());
      expect(mp3FrameAt(mp3, 0)).toEqual({ version: 2, layer: 3, kbps: 64, sampleRate: 24_000, mono: true, length: 192, samples: 576 });
      const frames = mp3Frames(mp3);
      // 25 characters at 20 a second: 1.25 s of audio, 30,000 samples; the encoder pads at most a few frames.
      expect(frames.length * 576).toBeGreaterThanOrEqual(30_000);
      expect(frames.length * 576 - 30_000).toBeLessThan(4 * 576);
    });

    it('wav and pcm as before; opus is still refused as the client mistake, nothing charged', async () => {
      const wavAnswer = await client.audio.speech.create({ model: 'test/speech', input: 'hi', voice: 'alloy', response_format: 'wav' });
      expect(Buffer.from(await wavAnswer.arrayBuffer()).toString('latin1', 0, 4)).toBe('RIFF');
      const opus = await client.audio.speech.create({ model: 'test/speech', input: 'hi', voice: 'alloy', response_format: 'opus' }).catch((e) => e);
      expect(opus).toBeInstanceOf(OpenAI.BadRequestError);
      expect(opus.error.message).toMatch(/mp3, wav or pcm/);
      // The upstream refused it after the hold: released, charged nothing.
      await expectReleased(gw, acct.accountId, opus.error.request_id, 'invalid_request');
    });
  });

  describe('audio and video models publish their rates in every listing', () => {
    const speech = {
      prompt: null,
      completion: null,
      request: null,
      image: null,
      character: '0.000015123456789',
      second: null,
      input_cache_read: null,
      input_cache_write: null,
    };
    const stt = { ...speech, character: null, second: '0.0001' };
    const video = { ...speech, character: null, second: '0.05' };

    it('GET /v1/models, the single-model route and the narrowed video listing show the per-character and per-second rates', async () => {
      const models = (await (await fetch(`${gw.url}/v1/models`)).json()).data as Array<{ id: string; pricing: unknown }>;
      const pricing = (id: string) => models.find((m) => m.id === id)?.pricing;
      expect(pricing('test/speech')).toEqual(speech);
      expect(pricing('test/stt')).toEqual(stt);
      expect(pricing('test/video')).toEqual(video);
      // Every item has the same keys: a text model's audio rates are null.
      expect(pricing('test/chat')).toEqual({
        prompt: '0.001',
        completion: '0.002',
        request: null,
        image: null,
        character: null,
        second: null,
        input_cache_read: null,
        input_cache_write: null,
      });
      expect((await (await fetch(`${gw.url}/v1/model/test/speech`)).json()).data.pricing).toEqual(speech);
      const videos = (await (await fetch(`${gw.url}/v1/videos/models`)).json()).data as Array<{ id: string; pricing: unknown }>;
      expect(videos.find((m) => m.id === 'test/video')?.pricing).toEqual(video);
    });

    it('the listed rate is the one charged: speech of 7 characters costs exactly 7 × the listed rate', async () => {
      const { response } = await client.audio.speech
        .create({ model: 'test/speech', input: 'seven c', voice: 'alloy', response_format: 'wav' })
        .withResponse();
      // 7 × 0.000015123456789 = 0.000105864197523 USD, rounded half up to nano-USD once: 0.000105864.
      expect(response.headers.get('x-gateway-cost')).toBe('0.000105864');
    });
  });

  describe('GET /v1/catalog: addedAt', () => {
    it('is when the model first appeared, for every model the config gives no added_at; the config wins where it does', async () => {
      const r = await fetch(`${gw.url}/v1/catalog`);
      expect(r.status).toBe(200);
      const { data, generatedAt } = (await r.json()) as { data: Array<{ id: string; addedAt: string | null }>; generatedAt: string };
      expect(data.find((m) => m.id === 'test/dated')?.addedAt).toBe('2025-05-01T00:00:00.000Z');
      const recorded = data.filter((m) => m.id !== 'test/dated');
      expect(recorded).toHaveLength(7);
      for (const m of recorded) {
        expect(m.addedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        // Recorded as this gateway started: after the suite began (a second's slack for clocks), not after the build.
        expect(Date.parse(m.addedAt!)).toBeGreaterThanOrEqual(suiteStart.getTime() - 1_000);
        expect(Date.parse(m.addedAt!)).toBeLessThanOrEqual(Date.parse(generatedAt));
      }
      // One start records every model at once.
      expect(new Set(recorded.map((m) => m.addedAt)).size).toBe(1);
    });
  });
});

describe('GET /v1/catalog: addedAt survives a restart of the embedded gateway on its data directory', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-added-at-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Starts the gateway on `dir` with `config`, answers its catalogue's dates by model, and stops it. */
  async function datesOnce(config: ReturnType<typeof auditConfig>): Promise<Record<string, string | null>> {
    const port = await pickPort((p) => [p], 'the embedded gateway');
    const env = readEnv({
      PORT: String(port),
      METRICS_PORT: '0',
      HOST: '127.0.0.1',
      GATEWAY_PUBLIC_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'silent',
    });
    const gw = await startEmbedded(env, parseConfig(config), createLogger('test', 'silent'), { dataDir: dir });
    try {
      const { data } = (await (await fetch(`${gw.url}/v1/catalog`)).json()) as { data: Array<{ id: string; addedAt: string | null }> };
      return Object.fromEntries(data.map((m) => [m.id, m.addedAt]));
    } finally {
      await gw.stop();
    }
  }

  it('a model keeps its first date; one added later gets the date of the start that first listed it', async () => {
    const base = auditConfig();
    const first = await datesOnce(base);
    expect(first['test/chat']).toEqual(expect.any(String));
    const withNew = { ...base, models: [...base.models, { ...base.models[0], id: 'test/chat-new', name: 'new' }] };
    const second = await datesOnce(withNew);
    expect(second['test/chat']).toBe(first['test/chat']);
    expect(second['test/embed']).toBe(first['test/embed']);
    expect(Date.parse(second['test/chat-new']!)).toBeGreaterThan(Date.parse(first['test/chat']!));
  }, 120_000);
});
