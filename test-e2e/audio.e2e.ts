import fs from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { wavHeader } from '@gateway/upstreams/testing';
import { FAKE_REPORTED_SECONDS, fakeSpeechPieces, releaseSpeech, speechFinished } from './support/fake-openai-audio';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import type { ReceivedFile } from './support/fake-server';
import {
  closedHold,
  expectReleased,
  generationOf,
  holdCount,
  type Mode,
  settled,
  type TestGateway,
  usageRecord,
  useGatewaySuite,
  REPLICATED_FLEET,
} from './support/harness';
import { plainChatModel } from './support/config';

const modes: Mode[] = ['embedded', REPLICATED_FLEET];
/** 0.001 USD per character and per second: 1,000,000 nano-USD, so every figure below counts whole units. */
const NANO_PER_UNIT = 1_000_000n;
const nanoOf = (units: number) => String(BigInt(units) * NANO_PER_UNIT);
const usdOf = (units: number) => String(units / 1000);

/** Each failing behaviour has its own endpoint (provider/model), so no test opens a circuit another relies on. */
function audioConfig(fakeUrl: string) {
  const model = (id: string, rate: 'character' | 'second', endpoints: Array<[string, string]>) => ({
    id,
    name: id,
    category: 'audio',
    status: 'available',
    pricing: { [rate]: '0.001' },
    endpoints: endpoints.map(([provider, m]) => ({ provider, model: m })),
  });
  return {
    providers: [
      { id: 'fake', kind: 'openai', base_url: fakeUrl, timeout_ms: 10_000 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      model('test/speech', 'character', [['fake', 'speech-ok']]),
      model('test/speech-held', 'character', [['fake', 'speech-held']]),
      model('test/speech-break', 'character', [['fake', 'speech-break']]),
      model('test/speech-failover', 'character', [
        ['fake', 'status-500'],
        ['fake', 'speech-ok'],
      ]),
      model('test/speech-dies-first', 'character', [
        ['fake', 'speech-die'],
        ['fake', 'speech-ok'],
      ]),
      model('test/speech-client-error', 'character', [
        ['fake', 'status-400'],
        ['fake', 'speech-ok'],
      ]),
      model('test/speech-sim', 'character', [['sim', 'sim-speech']]),
      model('test/stt', 'second', [['fake', 'stt-ok']]),
      model('test/stt-json-seconds', 'second', [['fake', 'stt-json-seconds']]),
      model('test/stt-failover', 'second', [
        ['fake', 'status-502'],
        ['fake', 'stt-ok'],
      ]),
      model('test/stt-sim', 'second', [['sim', 'sim-stt']]),
      plainChatModel('fake', 'ok'),
    ],
    // A recording outgrows the other routes' body limit: transcriptions have their own.
    limits: { max_request_body: '64kb', max_audio_body: '256kb' },
  };
}

/** `seconds` of 8 kHz mono 16-bit silence as a WAV file: 16,000 bytes a second. */
function wav(seconds: number): Buffer {
  const data = Buffer.alloc(seconds * 16_000);
  return Buffer.concat([wavHeader(8000, 1, data.length), data]);
}
const fixture = (name: string) => fs.readFileSync(path.join(__dirname, '../services/media/src/transcriptions/fixtures', name));

describe.each(modes)('audio routes through the %s gateway', (mode) => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let client: OpenAI;

  useGatewaySuite(mode, { upstreams: startFakeOpenAI, config: (f) => audioConfig(f.url), credits: 50 }, (s) => {
    ({ upstreams: fake, gw, acct } = s);
    client = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });

  const post = (route: string, body: unknown, init: RequestInit = {}) =>
    fetch(`${gw.url}/v1/audio/${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      ...init,
    });
  const requestIdOf = (r: Response) => r.headers.get('x-gateway-request-id');
  /** GET /v1/generation once the settle has travelled to billing (over the bus in the fleet). */
  const recordOf = async (requestId: string | null) => {
    await settled(gw, acct.accountId);
    return generationOf(gw, acct.key, requestId);
  };
  const sentUpstream = () => fake.requests[fake.requests.length - 1].body;

  /** A body the gateway refuses: the status and code, nothing held, nothing sent upstream. */
  async function expectRefused(r: Promise<Response>, status: number, code: string, message?: RegExp) {
    const upstreamCalls = fake.requests.length;
    const holds = await holdCount(gw, acct.accountId);
    const res = await r;
    expect(res.status).toBe(status);
    const { error } = await res.json();
    expect(error).toMatchObject({ code, request_id: expect.stringMatching(/^req_/) });
    if (message) expect(error.message).toMatch(message);
    expect(await holdCount(gw, acct.accountId)).toBe(holds);
    expect(fake.requests.length).toBe(upstreamCalls);
  }

  describe('POST /v1/audio/speech', () => {
    it('answers the openai client with the audio bytes, their type and the exact charge, per input character', async () => {
      const input = `Hello from ${mode}`;
      const { data, response } = await client.audio.speech
        .create({ model: 'test/speech', input, voice: 'nova', response_format: 'wav' })
        .withResponse();
      expect(Buffer.from(await data.arrayBuffer()).toString()).toBe(fakeSpeechPieces(input).join(''));
      expect(response.headers.get('content-type')).toBe('audio/wav');
      expect(response.headers.get('x-gateway-cost')).toBe(usdOf(input.length));
      expect(sentUpstream()).toEqual({ model: 'speech-ok', input, voice: 'nova', response_format: 'wav', speed: 1 });

      const requestId = response.headers.get('x-gateway-request-id');
      expect(await closedHold(gw, acct.accountId, requestId)).toEqual({
        amount: nanoOf(input.length),
        charge: nanoOf(input.length),
        state: 'settled',
      });
      expect(await recordOf(requestId)).toMatchObject({
        model: 'test/speech',
        streamed: true,
        status: 'succeeded',
        cost: usdOf(input.length),
        attempts: 1,
        usage_estimated: false,
      });
    });

    it('fills the defaults (voice alloy, mp3, speed 1) and counts characters as code points', async () => {
      const input = '🎙 mic';
      const r = await post('speech', { model: 'test/speech', input });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('audio/mpeg');
      expect(r.headers.get('x-gateway-cost')).toBe(usdOf(5));
      expect(sentUpstream()).toEqual({ model: 'speech-ok', input, voice: 'alloy', response_format: 'mp3', speed: 1 });
      await r.arrayBuffer();
      expect((await closedHold(gw, acct.accountId, requestIdOf(r))).charge).toBe(nanoOf(5));
    });

    it('streams the audio as it arrives: the client has the first bytes before the upstream has sent the rest', async () => {
      const input = `held in ${mode}`;
      const r = await post('speech', { model: 'test/speech-held', input, response_format: 'wav' });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-gateway-cost')).toBe(usdOf(input.length));
      const [first, ...rest] = fakeSpeechPieces(input);
      const reader = r.body!.getReader();
      let received = '';
      while (received.length < first.length) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the audio ended before its first piece: ${received}`);
        received += Buffer.from(value).toString();
      }
      expect(received).toBe(first);
      expect(speechFinished(input)).toBe(false);

      expect(releaseSpeech(input)).toBe(true);
      for (let step = await reader.read(); !step.done; step = await reader.read()) received += Buffer.from(step.value).toString();
      expect(received).toBe([first, ...rest].join(''));
      expect(await closedHold(gw, acct.accountId, requestIdOf(r))).toMatchObject({ state: 'settled', charge: nanoOf(input.length) });
    });

    it.each([
      ['a 5xx', 'test/speech-failover'],
      ['an upstream that accepts and dies before its first byte', 'test/speech-dies-first'],
    ])('fails over on %s and charges only the answering endpoint', async (_why, model) => {
      const input = 'fail over';
      const r = await post('speech', { model, input, response_format: 'wav' });
      expect(r.status).toBe(200);
      expect(Buffer.from(await r.arrayBuffer()).toString()).toBe(fakeSpeechPieces(input).join(''));
      const requestId = requestIdOf(r);
      expect(await closedHold(gw, acct.accountId, requestId)).toMatchObject({ state: 'settled', charge: nanoOf(input.length) });
      expect(await recordOf(requestId)).toMatchObject({ attempts: 2, fallback_used: true, status: 'succeeded' });
    });

    it("does not fail over on the upstream's 400: answers 400 and releases the hold", async () => {
      const n = fake.requests.length;
      const r = await post('speech', { model: 'test/speech-client-error', input: 'x', response_format: 'wav' });
      expect(r.status).toBe(400);
      const { error } = await r.json();
      expect(error.code).toBe('invalid_request');
      expect(fake.requests.length - n).toBe(1);
      await expectReleased(gw, acct.accountId, error.request_id, 'invalid_request');
    });

    it('releases the hold of a stream that breaks after its first byte, and cuts the response so it cannot pass for whole audio', async () => {
      const r = await post('speech', { model: 'test/speech-break', input: 'breaks', response_format: 'wav' });
      expect(r.status).toBe(200);
      // Already sent with the head; the ledger, not this header, says what was charged.
      expect(r.headers.get('x-gateway-cost')).toBe(usdOf(6));
      await expect(r.arrayBuffer()).rejects.toThrow();
      await expectReleased(gw, acct.accountId, requestIdOf(r), 'upstream_unavailable');
    });

    it('charges a client that leaves mid-stream as announced, recorded as failed with client_closed', async () => {
      const input = `leaving in ${mode}`;
      const controller = new AbortController();
      const r = await post('speech', { model: 'test/speech-held', input, response_format: 'wav' }, { signal: controller.signal });
      expect(r.status).toBe(200);
      const reader = r.body!.getReader();
      expect((await reader.read()).done).toBe(false);
      controller.abort();
      await reader.cancel().catch(() => undefined);
      const requestId = requestIdOf(r);
      expect(await usageRecord(gw, acct.accountId, requestId)).toMatchObject({
        status: 'failed',
        error_code: 'client_closed',
        cost: nanoOf(input.length),
      });
      expect(await closedHold(gw, acct.accountId, requestId)).toEqual({
        amount: nanoOf(input.length),
        charge: nanoOf(input.length),
        state: 'settled',
      });
      expect(speechFinished(input)).toBe(false);
    });

    it('serves a simulated model as WAV, and refuses the formats it cannot make as the client’s mistake, charging nothing', async () => {
      const r = await post('speech', { model: 'test/speech-sim', input: 'simulated', response_format: 'wav' });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('audio/wav');
      const audio = Buffer.from(await r.arrayBuffer());
      expect(audio.toString('latin1', 0, 4)).toBe('RIFF');
      expect(audio.readUInt32LE(40)).toBe(audio.length - 44);

      const flac = await post('speech', { model: 'test/speech-sim', input: 'simulated', response_format: 'flac' });
      expect(flac.status).toBe(400);
      const { error } = await flac.json();
      expect(error.message).toMatch(/mp3, wav or pcm/);
      await expectReleased(gw, acct.accountId, error.request_id, 'invalid_request');
    });

    describe('refusals hold nothing', () => {
      it.each([
        ['no input', 400, 'invalid_request', { model: 'test/speech' }],
        ['an empty input', 400, 'invalid_request', { model: 'test/speech', input: '' }],
        ['4097 characters', 400, 'invalid_request', { model: 'test/speech', input: 'a'.repeat(4097) }],
        ['speed 5', 400, 'invalid_request', { model: 'test/speech', input: 'x', speed: 5 }],
        ['speed 0.1', 400, 'invalid_request', { model: 'test/speech', input: 'x', speed: 0.1 }],
        ['an unknown format', 400, 'invalid_request', { model: 'test/speech', input: 'x', response_format: 'ogg' }],
        ['an unknown model', 409, 'model_unavailable', { model: 'nobody/nothing', input: 'x' }],
      ])('%s → %i %s', async (_why, status, code, body) => {
        await expectRefused(post('speech', body), status, code);
      });

      it('a text model → 400 naming its category', async () => {
        await expectRefused(
          post('speech', { model: 'test/chat', input: 'x' }),
          400,
          'invalid_request',
          /test\/chat is a text model; \/v1\/audio\/speech serves audio/,
        );
      });

      it('an audio model without a character price (a transcription model) → 400 saying so', async () => {
        await expectRefused(post('speech', { model: 'test/stt', input: 'x' }), 400, 'invalid_request', /test\/stt has no pricing\.character/);
      });
    });
  });

  describe('POST /v1/audio/transcriptions', () => {
    const transcribe = (body: Record<string, unknown>, audio = wav(4), format = 'wav') =>
      post('transcriptions', { model: 'test/stt', input_audio: { data: audio.toString('base64'), format }, ...body });

    it('answers json verbatim, charging the measured seconds when the upstream reports none, and says the figure is estimated', async () => {
      const audio = wav(4); // 64 kB, 85 kB in base64: past max_request_body (64kb), within max_audio_body
      const r = await transcribe({}, audio);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/json');
      expect(await r.text()).toBe(JSON.stringify({ text: `heard ${audio.length} bytes of audio.wav` }));
      expect(r.headers.get('x-gateway-cost')).toBe(usdOf(4));
      const requestId = requestIdOf(r);
      expect(await closedHold(gw, acct.accountId, requestId)).toEqual({ amount: nanoOf(4), charge: nanoOf(4), state: 'settled' });
      expect(await recordOf(requestId)).toMatchObject({
        model: 'test/stt',
        streamed: false,
        status: 'succeeded',
        cost: usdOf(4),
        usage_estimated: true,
      });
      const sent = sentUpstream();
      expect(sent).toMatchObject({ model: 'stt-ok', response_format: 'json' });
      expect((sent.file as ReceivedFile).bytes.equals(audio)).toBe(true);
      expect(sent.file).toMatchObject({ name: 'audio.wav', type: 'audio/wav' });
    });

    it.each([
      ['text', 'text/plain; charset=utf-8', (t: string) => `${t}\n`],
      ['srt', 'application/x-subrip; charset=utf-8', (t: string) => `1\n00:00:00,000 --> 00:00:02,200\n${t}\n\n`],
      ['vtt', 'text/vtt; charset=utf-8', (t: string) => `WEBVTT\n\n00:00:00.000 --> 00:00:02.200\n${t}\n\n`],
    ])('answers %s verbatim with the upstream content type', async (format, type, render) => {
      const audio = wav(1);
      const r = await transcribe({ response_format: format }, audio);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe(type);
      expect(await r.text()).toBe(render(`heard ${audio.length} bytes of audio.wav`));
      expect(await recordOf(requestIdOf(r))).toMatchObject({ cost: usdOf(1), usage_estimated: true });
    });

    it('charges the duration verbose_json reports (per started second, within the hold), forwarding language and timestamp_granularities', async () => {
      const r = await transcribe({ response_format: 'verbose_json', language: 'de', timestamp_granularities: ['word', 'segment'] });
      expect(r.status).toBe(200);
      const body = await r.json();
      expect(body).toMatchObject({ duration: FAKE_REPORTED_SECONDS, language: 'de', words: [{ word: 'heard', start: 0, end: 0.4 }] });
      expect(sentUpstream()).toMatchObject({ response_format: 'verbose_json', language: 'de', timestamp_granularities: ['word', 'segment'] });
      // Held 4 measured seconds; charged the 2.2 reported, billed as 3.
      expect(r.headers.get('x-gateway-cost')).toBe(usdOf(3));
      const requestId = requestIdOf(r);
      expect(await closedHold(gw, acct.accountId, requestId)).toEqual({ amount: nanoOf(4), charge: nanoOf(3), state: 'settled' });
      expect(await recordOf(requestId)).toMatchObject({ cost: usdOf(3), usage_estimated: false });
    });

    it("charges the seconds in json's usage when the upstream reports them there", async () => {
      const r = await post('transcriptions', { model: 'test/stt-json-seconds', input_audio: { data: wav(4).toString('base64'), format: 'wav' } });
      expect(r.status).toBe(200);
      expect(await recordOf(requestIdOf(r))).toMatchObject({ cost: usdOf(3), usage_estimated: false });
    });

    it('takes a data: URL and measures other containers (mp3, by its first bytes and frames)', async () => {
      const mp3 = fixture('silence-1.5s.mp3');
      const r = await post('transcriptions', {
        model: 'test/stt',
        input_audio: { data: `data:audio/mpeg;base64,${mp3.toString('base64')}`, format: 'mp3' },
      });
      expect(r.status).toBe(200);
      expect((sentUpstream().file as ReceivedFile).bytes.equals(mp3)).toBe(true);
      expect(sentUpstream().file).toMatchObject({ name: 'audio.mp3', type: 'audio/mpeg' });
      // 1.656 s measured, billed as 2.
      expect(await closedHold(gw, acct.accountId, requestIdOf(r))).toEqual({ amount: nanoOf(2), charge: nanoOf(2), state: 'settled' });
    });

    it('fails over on a 5xx and charges only the answering endpoint', async () => {
      const r = await post('transcriptions', { model: 'test/stt-failover', input_audio: { data: wav(1).toString('base64'), format: 'wav' } });
      expect(r.status).toBe(200);
      expect(await recordOf(requestIdOf(r))).toMatchObject({ attempts: 2, fallback_used: true, cost: usdOf(1) });
    });

    it('serves a simulated model, which reports no duration: the measured one is charged, marked estimated', async () => {
      const r = await post('transcriptions', { model: 'test/stt-sim', input_audio: { data: wav(2).toString('base64'), format: 'wav' } });
      expect(r.status).toBe(200);
      expect((await r.json()).text).toMatch(/simulated transcription by sim-stt/);
      expect(await recordOf(requestIdOf(r))).toMatchObject({ cost: usdOf(2), usage_estimated: true });
    });

    describe('refusals hold nothing', () => {
      const data = wav(1).toString('base64');
      it.each([
        [
          'timestamp_granularities without verbose_json',
          { timestamp_granularities: ['word'] },
          /timestamp_granularities: is accepted only with response_format verbose_json/,
        ],
        ['a language that is not ISO-639-1', { language: 'english' }, /language: must be an ISO-639-1 code/],
        [
          'invalid base64',
          { input_audio: { data: `${data.slice(0, 10)}*${data.slice(10)}`, format: 'wav' } },
          /input_audio\.data is not valid base64/,
        ],
        [
          'a format the gateway cannot measure',
          { input_audio: { data, format: 'aiff' } },
          /input_audio\.format: must be one of wav, mp3, ogg, flac, m4a, webm/,
        ],
        ['audio that is not the container named', { input_audio: { data, format: 'mp3' } }, /the data is not mp3 audio/],
        [
          'a recording whose duration cannot be read',
          { input_audio: { data: fixture('no-duration.webm').toString('base64'), format: 'webm' } },
          /no duration could be read from this webm audio/,
        ],
        ['no input_audio', { input_audio: undefined }, /input_audio/],
      ])('%s → 400 saying why', async (_why, body, message) => {
        await expectRefused(transcribe(body), 400, 'invalid_request', message);
      });

      it('a text model → 400 naming its category', async () => {
        await expectRefused(
          transcribe({ model: 'test/chat' }),
          400,
          'invalid_request',
          /test\/chat is a text model; \/v1\/audio\/transcriptions serves audio/,
        );
      });

      it('a speech model (no second price) → 400 saying so', async () => {
        await expectRefused(transcribe({ model: 'test/speech' }), 400, 'invalid_request', /test\/speech has no pricing\.second/);
      });

      it('an unknown model → 409', async () => {
        await expectRefused(transcribe({ model: 'nobody/nothing' }), 409, 'model_unavailable');
      });

      it('a multipart upload is taken too (the form OpenAI takes), measured and charged like the JSON body', async () => {
        const form = new FormData();
        form.append('model', 'test/stt');
        form.append('file', new Blob([new Uint8Array(wav(1))], { type: 'audio/wav' }), 'a.wav');
        const r = await fetch(`${gw.url}/v1/audio/transcriptions`, { method: 'POST', headers: { authorization: `Bearer ${acct.key}` }, body: form });
        expect(r.status).toBe(200);
        expect(r.headers.get('x-gateway-cost')).toBe(usdOf(1));
      });

      it('a body past limits.max_audio_body → 413', async () => {
        // 14 s: 224 kB, 299 kB in base64.
        await expectRefused(transcribe({}, wav(14)), 413, 'invalid_request', /too large/);
      });
    });
  });
});
