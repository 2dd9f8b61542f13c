import crypto from 'node:crypto';
import type { SpeechFormat, SpeechProtocol } from '../types';
import { UpstreamError } from '../upstream-error';
import { SPEECH_CONTENT_TYPE } from '../mime';
import { mp3Of } from './mp3';
import { wavHeader } from './wav';

/** OpenAI's pcm is 24 kHz 16-bit mono; wav uses the same samples so both formats carry one sound. */
export const SIMULATED_SAMPLE_RATE = 24_000;
/** Roughly the pace of speech (20 characters a second at speed 1). */
const SECONDS_PER_CHARACTER = 0.05;
const SAMPLES_PER_CHUNK = 4_800;
const FADE_SAMPLES = 240;

/**
 * mp3 (the contract's default, encoded with LAME), wav and pcm: the formats this upstream makes truthfully.
 * Labelling other bytes as opus, aac or flac would hand the client a file its decoder rejects, so those are refused
 * as the client's mistake.
 */
const PRODUCED: ReadonlySet<SpeechFormat> = new Set(['mp3', 'wav', 'pcm']);

export function simulatedSampleCount(input: string, speed: number): number {
  return Math.round((input.length * SECONDS_PER_CHARACTER * SIMULATED_SAMPLE_RATE) / speed);
}

/**
 * A tone as long as the input would take to say at `speed`, its pitch seeded by the voice (220 to 660 Hz), faded
 * in and out so it does not click. Made chunk by chunk as it is read, like a real upstream's stream.
 */
export const simulatedSpeech: SpeechProtocol['speech'] = async (_ep, req) => {
  if (!PRODUCED.has(req.responseFormat)) {
    throw new UpstreamError('status', `simulated speech comes only as response_format mp3, wav or pcm, not ${req.responseFormat}`, 400);
  }
  // The route bounds speed (0.25 to 4); a call past it must not become an endless tone.
  if (!(req.speed > 0)) throw new UpstreamError('status', 'speed must be positive', 400);
  const samples = simulatedSampleCount(req.input, req.speed);
  const hz = 220 + (crypto.createHash('sha256').update(req.voice).digest().readUInt16LE(0) % 441);
  const contentType = SPEECH_CONTENT_TYPE[req.responseFormat];
  if (req.responseFormat === 'mp3') return { contentType, body: mp3Of(tone(samples, hz), SIMULATED_SAMPLE_RATE) };
  const header = req.responseFormat === 'wav' ? wavHeader(SIMULATED_SAMPLE_RATE, 1, samples * 2) : undefined;
  return { contentType, body: withHeader(header, tone(samples, hz)) };
};

async function* withHeader(header: Buffer | undefined, body: AsyncIterable<Buffer>): AsyncIterable<Uint8Array> {
  if (header) yield header;
  yield* body;
}

/** 16-bit little-endian mono samples, chunk by chunk. */
async function* tone(samples: number, hz: number): AsyncIterable<Buffer> {
  for (let start = 0; start < samples; start += SAMPLES_PER_CHUNK) {
    const count = Math.min(SAMPLES_PER_CHUNK, samples - start);
    const out = Buffer.alloc(count * 2);
    for (let i = 0; i < count; i++) {
      const t = start + i;
      const fade = Math.min(1, t / FADE_SAMPLES, (samples - 1 - t) / FADE_SAMPLES);
      out.writeInt16LE(Math.round(8_000 * fade * Math.sin((2 * Math.PI * hz * t) / SIMULATED_SAMPLE_RATE)), i * 2);
    }
    yield out;
  }
}
