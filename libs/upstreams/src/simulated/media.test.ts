import zlib from 'node:zlib';
import type { ResolvedEndpoint } from '@gateway/config';
import type { SpeechRequest, TranscriptFormat } from '../types';
import { SIMULATED_IMAGE_SIDE, simulatedImages } from './images';
import { SIMULATED_SAMPLE_RATE, simulatedSampleCount, simulatedSpeech } from './speech';
import { simulatedTranscribe } from './transcription';
import { mp3Frames } from '../testing/mp3-frames';

const ep = { key: 'sim/sim-media', provider: { id: 'sim', kind: 'simulated' }, upstreamModel: 'sim-media' } as ResolvedEndpoint;
const opts = { signal: new AbortController().signal, requestId: 'req_test' };

/** Bit by bit, unlike the table the encoder uses, so the two cannot share a mistake. */
function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return (c ^ 0xffffffff) >>> 0;
}

/** Walks the chunks of a PNG, checking each CRC. */
function pngChunks(png: Buffer): Array<{ type: string; data: Buffer }> {
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const chunks: Array<{ type: string; data: Buffer }> = [];
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    const typed = png.subarray(at + 4, at + 8 + length);
    expect(png.readUInt32BE(at + 8 + length)).toBe(crc32(typed));
    chunks.push({ type: typed.subarray(0, 4).toString('latin1'), data: typed.subarray(4) });
    at += 12 + length;
  }
  return chunks;
}

async function collect(body: AsyncIterable<Uint8Array>): Promise<{ bytes: Buffer; chunks: number }> {
  const parts: Buffer[] = [];
  for await (const c of body) parts.push(Buffer.from(c));
  return { bytes: Buffer.concat(parts), chunks: parts.length };
}

describe('simulated images', () => {
  it('draws n valid PNGs (signature, IHDR, CRCs, pixels that inflate to one colour), 64×64 whatever the size asked', async () => {
    const { images } = await simulatedImages(ep, { prompt: 'a red fox', n: 2, size: '1024x1024' }, opts);
    expect(images).toHaveLength(2);
    for (const image of images) {
      if (image.kind !== 'bytes') throw new Error('simulated images are bytes');
      expect(image.contentType).toBe('image/png');
      const chunks = pngChunks(image.bytes);
      expect(chunks.map((c) => c.type)).toEqual(['IHDR', 'IDAT', 'IEND']);
      const ihdr = chunks[0].data;
      expect([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4)]).toEqual([SIMULATED_IMAGE_SIDE, SIMULATED_IMAGE_SIDE]);
      expect([...ihdr.subarray(8)]).toEqual([8, 2, 0, 0, 0]);
      const raw = zlib.inflateSync(chunks[1].data);
      // Every scanline: filter byte 0 (None), then the one colour the first pixel has.
      const row = Buffer.concat([Buffer.from([0]), ...Array.from({ length: SIMULATED_IMAGE_SIDE }, () => raw.subarray(1, 4))]);
      expect(raw.equals(Buffer.concat(Array.from({ length: SIMULATED_IMAGE_SIDE }, () => row)))).toBe(true);
    }
  });

  it('is deterministic per prompt and index: the same call draws the same images, each index its own colour', async () => {
    const a = await simulatedImages(ep, { prompt: 'a red fox', n: 3 }, opts);
    const b = await simulatedImages(ep, { prompt: 'a red fox', n: 3 }, opts);
    const other = await simulatedImages(ep, { prompt: 'a blue fox', n: 1 }, opts);
    expect(a).toEqual(b);
    const bytes = (r: typeof a) => r.images.map((i) => (i.kind === 'bytes' ? i.bytes.toString('hex') : i.url));
    expect(new Set(bytes(a)).size).toBe(3);
    expect(bytes(a)).not.toContain(bytes(other)[0]);
  });
});

describe('simulated speech', () => {
  const request: SpeechRequest = { input: 'Hello from the simulated voice', voice: 'alloy', responseFormat: 'wav', speed: 1 };

  it('answers a valid WAV: RIFF/WAVE, 16-bit PCM mono at 24 kHz, the data length what the header says, streamed in chunks', async () => {
    const audio = await simulatedSpeech(ep, request, opts);
    expect(audio.contentType).toBe('audio/wav');
    const { bytes, chunks } = await collect(audio.body);
    expect(chunks).toBeGreaterThan(2);
    expect(bytes.toString('latin1', 0, 4)).toBe('RIFF');
    expect(bytes.readUInt32LE(4)).toBe(bytes.length - 8);
    expect(bytes.toString('latin1', 8, 16)).toBe('WAVEfmt ');
    expect(bytes.readUInt32LE(16)).toBe(16);
    expect(bytes.readUInt16LE(20)).toBe(1); // PCM
    expect(bytes.readUInt16LE(22)).toBe(1); // mono
    expect(bytes.readUInt32LE(24)).toBe(SIMULATED_SAMPLE_RATE);
    expect(bytes.readUInt32LE(28)).toBe(SIMULATED_SAMPLE_RATE * 2);
    expect(bytes.readUInt16LE(32)).toBe(2);
    expect(bytes.readUInt16LE(34)).toBe(16);
    expect(bytes.toString('latin1', 36, 40)).toBe('data');
    expect(bytes.readUInt32LE(40)).toBe(bytes.length - 44);
    expect(bytes.length - 44).toBe(2 * simulatedSampleCount(request.input, request.speed));
    expect(bytes.subarray(44).some((b) => b !== 0)).toBe(true);
  });

  it('lasts in proportion to the input length over the speed', () => {
    const base = simulatedSampleCount('x'.repeat(40), 1);
    expect(base).toBe(2 * SIMULATED_SAMPLE_RATE); // 40 characters at 20 a second
    expect(simulatedSampleCount('x'.repeat(80), 1)).toBe(2 * base);
    expect(simulatedSampleCount('x'.repeat(40), 2)).toBe(base / 2);
    expect(simulatedSampleCount('x'.repeat(40), 0.25)).toBe(4 * base);
  });

  it('answers pcm as the same samples without the header', async () => {
    const wav = await collect((await simulatedSpeech(ep, request, opts)).body);
    const pcm = await simulatedSpeech(ep, { ...request, responseFormat: 'pcm' }, opts);
    expect(pcm.contentType).toBe('audio/pcm');
    expect((await collect(pcm.body)).bytes).toEqual(wav.bytes.subarray(44));
  });

  it('answers mp3, the contract default: MPEG-2 Layer III frames, mono 24 kHz 64 kb/s, back to back, as long as the tone', async () => {
    const mp3 = await simulatedSpeech(ep, { ...request, responseFormat: 'mp3' }, opts);
    expect(mp3.contentType).toBe('audio/mpeg');
    const { bytes, chunks } = await collect(mp3.body);
    expect(chunks).toBeGreaterThan(1);
    const frames = mp3Frames(bytes);
    expect(new Set(frames.map((f) => JSON.stringify({ ...f, length: 0 })))).toEqual(
      new Set([JSON.stringify({ version: 2, layer: 3, kbps: 64, sampleRate: SIMULATED_SAMPLE_RATE, mono: true, length: 0, samples: 576 })]),
    );
    // The encoder adds its delay and pads the last frame: at most a few frames beyond the samples themselves.
    const samples = simulatedSampleCount(request.input, request.speed);
    const decoded = frames.length * 576;
    expect(decoded).toBeGreaterThanOrEqual(samples);
    expect(decoded - samples).toBeLessThan(4 * 576);
  });

  it.each(['opus', 'aac', 'flac'] as const)('refuses %s as the client fault rather than mislabel other bytes', async (format) => {
    await expect(simulatedSpeech(ep, { ...request, responseFormat: format }, opts)).rejects.toMatchObject({ status: 400, clientFault: true });
  });
});

describe('simulated transcription', () => {
  const audio = Buffer.from('some recorded bytes');
  const transcribe = (responseFormat: TranscriptFormat, bytes = audio) =>
    simulatedTranscribe(ep, { audio: bytes, format: 'wav', responseFormat }, opts);

  it('answers json with a text seeded by the audio bytes, the same for the same bytes, and reports no duration', async () => {
    const a = await transcribe('json');
    expect(a).toEqual(await transcribe('json'));
    expect(a).not.toHaveProperty('durationSeconds');
    expect(a.contentType).toBe('application/json');
    const { text } = JSON.parse(a.body);
    expect(text).toMatch(/simulated transcription/);
    expect(JSON.parse((await transcribe('json', Buffer.from('other bytes'))).body).text).not.toBe(text);
  });

  it('answers every format in its own framing around the same text', async () => {
    const { text } = JSON.parse((await transcribe('json')).body);
    const verbose = await transcribe('verbose_json');
    expect(verbose).not.toHaveProperty('durationSeconds');
    expect(JSON.parse(verbose.body)).toMatchObject({ task: 'transcribe', language: 'english', text });
    expect(await transcribe('text')).toEqual({ contentType: 'text/plain; charset=utf-8', body: `${text}\n` });
    expect(await transcribe('srt')).toEqual({ contentType: 'text/plain; charset=utf-8', body: `1\n00:00:00,000 --> 00:00:01,000\n${text}\n\n` });
    expect(await transcribe('vtt')).toEqual({ contentType: 'text/vtt; charset=utf-8', body: `WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n${text}\n\n` });
  });
});

describe('simulated transcription: verbose_json as OpenAI shapes it', () => {
  const audio = Buffer.from('some recorded bytes');
  const verbose = async (extra: { timestampGranularities?: Array<'word' | 'segment'>; measuredSeconds?: number; language?: string }) =>
    JSON.parse((await simulatedTranscribe(ep, { audio, format: 'wav', responseFormat: 'verbose_json', ...extra }, opts)).body);

  it('segments by default, timed over the measured length, their words joined into the text', async () => {
    const v = await verbose({ measuredSeconds: 6 });
    expect(v.duration).toBe(6);
    expect(v).not.toHaveProperty('words');
    expect(v.segments.length).toBeGreaterThan(1);
    expect(v.segments.map((s: { id: number }) => s.id)).toEqual(v.segments.map((_: unknown, i: number) => i));
    expect(v.segments[0]).toMatchObject({ seek: 0, start: 0, tokens: [], temperature: 0, avg_logprob: 0, compression_ratio: 1, no_speech_prob: 0 });
    expect(v.segments.at(-1).end).toBe(6);
    expect(v.segments.map((s: { text: string }) => s.text).join('')).toBe(` ${v.text}`);
    for (let i = 1; i < v.segments.length; i++) expect(v.segments[i].start).toBe(v.segments[i - 1].end);
  });

  it('words with `word`, segments too with both; each word in order, back to back, ending at the duration', async () => {
    const onlyWords = await verbose({ measuredSeconds: 2.5, timestampGranularities: ['word'] });
    expect(onlyWords).not.toHaveProperty('segments');
    expect(onlyWords.words.map((w: { word: string }) => w.word).join(' ')).toBe(onlyWords.text);
    expect(onlyWords.words[0].start).toBe(0);
    expect(onlyWords.words.at(-1).end).toBe(2.5);
    for (const w of onlyWords.words) expect(w.end).toBeGreaterThan(w.start);
    const both = await verbose({ measuredSeconds: 2.5, timestampGranularities: ['word', 'segment'] });
    expect(both.words).toEqual(onlyWords.words);
    expect(both.segments.length).toBeGreaterThan(0);
  });

  it('names the language, as OpenAI does', async () => {
    expect((await verbose({ language: 'de' })).language).toBe('german');
  });
});
