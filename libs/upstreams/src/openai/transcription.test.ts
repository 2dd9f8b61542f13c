import type http from 'node:http';
import { Response } from 'undici';
import { createOpenAIProtocol } from '.';
import type { TranscriptionRequest } from '../types';
import { FAKE_ENV, callOptions, endpointAt, json, startFakeUpstream, type FakeUpstream, type Hit } from '../testing/fake-upstream';

const audio = Buffer.from('RIFF....WAVEfmt fake audio bytes');
const request: TranscriptionRequest = { audio, format: 'wav', responseFormat: 'json' };

/** Parses the multipart body the way a server would, so a malformed one fails here. */
const formOf = (hit: Hit) => new Response(hit.body, { headers: { 'content-type': String(hit.headers['content-type']) } }).formData();

describe('openai transcriptions', () => {
  const protocol = createOpenAIProtocol(FAKE_ENV);
  let fake: FakeUpstream;
  let respond: (res: http.ServerResponse) => void;
  beforeAll(async () => {
    fake = await startFakeUpstream((_hit, res) => respond(res));
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.hits.splice(0));

  const transcribe = (req: Partial<TranscriptionRequest> = {}) =>
    protocol.transcribe(endpointAt(fake.baseUrl), { ...request, ...req }, callOptions());
  const answer = (contentType: string, body: string) => (res: http.ServerResponse) => {
    res.writeHead(200, { 'content-type': contentType });
    res.end(body);
  };

  it('sends multipart/form-data: the file named with its format, model, language, response_format, each granularity repeated', async () => {
    respond = (res) => json(res, 200, { text: 'hi', duration: 1 });
    await transcribe({ format: 'MP3', language: 'de', responseFormat: 'verbose_json', timestampGranularities: ['word', 'segment'] });
    const [hit] = fake.hits;
    expect(hit.path).toBe('/v1/audio/transcriptions');
    expect(hit.headers.authorization).toBe('Bearer sk-fake');
    expect(hit.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const form = await formOf(hit);
    const file = form.get('file') as unknown as { name: string; type: string; arrayBuffer(): Promise<ArrayBuffer> };
    expect(file.name).toBe('audio.mp3');
    expect(file.type).toBe('audio/mpeg');
    expect(Buffer.from(await file.arrayBuffer())).toEqual(audio);
    expect(form.get('model')).toBe('up-model');
    expect(form.get('language')).toBe('de');
    expect(form.get('response_format')).toBe('verbose_json');
    expect(form.getAll('timestamp_granularities[]')).toEqual(['word', 'segment']);
  });

  it('sends no language or granularity it was not given, and keeps only letters and digits of the format in the file name', async () => {
    respond = (res) => json(res, 200, { text: 'hi' });
    await transcribe({ format: 'w"a\r\nv' });
    const form = await formOf(fake.hits[0]);
    expect((form.get('file') as unknown as { name: string }).name).toBe('audio.wav');
    expect(form.has('language')).toBe(false);
    expect(form.has('timestamp_granularities[]')).toBe(false);
  });

  it.each([
    ['text', 'text/plain; charset=utf-8', 'Hello there.\n'],
    ['srt', 'text/plain; charset=utf-8', '1\n00:00:00,000 --> 00:00:01,500\nHello there.\n\n'],
    ['vtt', 'text/vtt; charset=utf-8', 'WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello there.\n\n'],
  ] as const)('returns a %s answer verbatim with the upstream type and no duration', async (format, contentType, body) => {
    respond = answer(contentType, body);
    expect(await transcribe({ responseFormat: format })).toEqual({ contentType, body });
  });

  it('returns verbose_json verbatim with its reported duration', async () => {
    const body = '{"task":"transcribe","language":"english","duration":8.47,"text":"Hello there."}';
    respond = answer('application/json', body);
    expect(await transcribe({ responseFormat: 'verbose_json' })).toEqual({ contentType: 'application/json', body, durationSeconds: 8.47 });
  });

  it("takes json's usage.seconds as the duration, and reports none when the answer has neither", async () => {
    respond = answer('application/json', '{"text":"hi","usage":{"type":"duration","seconds":3}}');
    expect((await transcribe()).durationSeconds).toBe(3);
    respond = answer('application/json', '{"text":"hi","usage":{"type":"tokens","input_tokens":5}}');
    expect(await transcribe()).not.toHaveProperty('durationSeconds');
  });

  it("types an answer that names no type by the format's usual type", async () => {
    respond = (res) => {
      res.writeHead(200);
      res.end('plain words');
    };
    expect(await transcribe({ responseFormat: 'text' })).toEqual({ contentType: 'text/plain; charset=utf-8', body: 'plain words' });
  });

  it('treats a json format answered with something not a JSON object as a protocol failure (fails over)', async () => {
    respond = answer('text/plain', 'Hello there.');
    await expect(transcribe({ responseFormat: 'json' })).rejects.toMatchObject({ kind: 'protocol', clientFault: false });
  });
});
