import { createOpenAIProtocol } from '.';
import type { SpeechRequest } from '../types';
import { FAKE_ENV, callOptions, endpointAt, json, startFakeUpstream, type FakeUpstream } from '../testing/fake-upstream';

const request: SpeechRequest = { input: 'Hello there', voice: 'alloy', responseFormat: 'mp3', speed: 1.25 };

describe('openai speech', () => {
  const protocol = createOpenAIProtocol(FAKE_ENV);
  let fake: FakeUpstream;
  let respond: (res: import('node:http').ServerResponse) => void | Promise<void>;
  beforeAll(async () => {
    fake = await startFakeUpstream((_hit, res) => respond(res));
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.hits.splice(0));

  const speak = (req: SpeechRequest = request) => protocol.speech(endpointAt(fake.baseUrl), req, callOptions());

  it('relays the audio chunk by chunk, in order, while the upstream is still sending', async () => {
    const chunks = ['one-', 'two-', 'three'];
    let next!: () => void;
    let finished = false;
    respond = async (res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg' });
      for (const c of chunks) {
        const asked = new Promise<void>((r) => (next = r));
        res.write(c);
        await asked;
      }
      res.end();
      finished = true;
    };
    const audio = await speak();
    const got: string[] = [];
    for await (const chunk of audio.body) {
      got.push(Buffer.from(chunk).toString());
      if (got.length < chunks.length) expect(finished).toBe(false);
      next();
    }
    expect(got).toEqual(chunks);
    expect(audio.contentType).toBe('audio/mpeg');
    const [hit] = fake.hits;
    expect(hit.path).toBe('/v1/audio/speech');
    expect(hit.headers.authorization).toBe('Bearer sk-fake');
    expect(JSON.parse(hit.body.toString())).toEqual({ model: 'up-model', input: 'Hello there', voice: 'alloy', response_format: 'mp3', speed: 1.25 });
  });

  it.each([
    ['the upstream names an audio type', 'audio/ogg', 'opus', 'audio/ogg'],
    ['the upstream says only octet-stream', 'application/octet-stream', 'opus', 'audio/opus'],
    ['the upstream names no type', undefined, 'wav', 'audio/wav'],
  ] as const)('types the audio when %s', async (_name, upstreamType, format, expected) => {
    respond = (res) => {
      res.writeHead(200, upstreamType ? { 'content-type': upstreamType } : {});
      res.end('bytes');
    };
    const audio = await speak({ ...request, responseFormat: format });
    expect(audio.contentType).toBe(expected);
    for await (const _ of audio.body) {
      /* drain */
    }
  });

  it('treats a 2xx in JSON as a protocol failure, not audio (fails over)', async () => {
    respond = (res) => json(res, 200, { error: { message: 'quota' } });
    await expect(speak()).rejects.toMatchObject({ kind: 'protocol', clientFault: false });
  });

  it('surfaces a body cut after the head as broken_stream while it is read', async () => {
    respond = (res) => {
      res.writeHead(200, { 'content-type': 'audio/mpeg', 'content-length': '100' });
      res.write('partial');
      setTimeout(() => res.destroy(), 20);
    };
    const audio = await speak();
    const read = async () => {
      for await (const _ of audio.body) {
        /* drain */
      }
    };
    await expect(read()).rejects.toMatchObject({ kind: 'broken_stream' });
  });
});
