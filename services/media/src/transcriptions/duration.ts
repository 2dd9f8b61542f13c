import { GatewayError } from '@gateway/errors';
import type { AudioFormat } from './schema';

type MusicMetadata = typeof import('music-metadata');
let loading: Promise<MusicMetadata> | undefined;
/**
 * music-metadata is ESM only; import() loads it from this CommonJS code under tsx and under jest (whose swc
 * transform keeps import() as it is, with --experimental-vm-modules). Loaded once, on the first transcription.
 */
const musicMetadata = (): Promise<MusicMetadata> => (loading ??= import('music-metadata'));

const ascii = (b: Buffer, at: number, s: string) => b.length >= at + s.length && b.toString('latin1', at, at + s.length) === s;

/**
 * How each container's bytes begin. Checked before parsing because a parser told the wrong type can still
 * "succeed" (FLAC read as MPEG audio measures a fraction of its length), and a hold on a wrong figure is worse than
 * a refusal. An ID3 tag may open MP3 and FLAC files alike.
 */
const OPENS: Record<AudioFormat, (b: Buffer) => boolean> = {
  wav: (b) => ascii(b, 0, 'RIFF') && ascii(b, 8, 'WAVE'),
  mp3: (b) => ascii(b, 0, 'ID3') || (b.length > 1 && b[0] === 0xff && (b[1] & 0xe0) === 0xe0),
  ogg: (b) => ascii(b, 0, 'OggS'),
  flac: (b) => ascii(b, 0, 'fLaC') || ascii(b, 0, 'ID3'),
  m4a: (b) => ascii(b, 4, 'ftyp'),
  webm: (b) => b.length >= 4 && b.readUInt32BE(0) === 0x1a45dfa3,
};

const MIME: Record<AudioFormat, string> = {
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  ogg: 'audio/ogg',
  flac: 'audio/flac',
  m4a: 'audio/mp4',
  webm: 'audio/webm',
};

/**
 * Seconds of audio in `audio`, read from its container before any hold; 400 naming the reason when it cannot be,
 * and the request field the audio came in (`input_audio` in the JSON body, `file` in an upload).
 */
export async function measureSeconds(audio: Buffer, format: AudioFormat, field = 'input_audio'): Promise<number> {
  const refuse = (why: string) => new GatewayError('invalid_request', `Invalid request: ${field}: ${why}`);
  if (!OPENS[format](audio)) throw refuse(`the data is not ${format} audio (its first bytes are not a ${format} header)`);
  const mm = await musicMetadata();
  let seconds: number | undefined;
  try {
    // duration: true reads the whole file where the header alone does not tell (MP3 without a Xing/Info frame).
    const meta = await mm.parseBuffer(audio, { mimeType: MIME[format], size: audio.length }, { duration: true, skipCovers: true });
    seconds = meta.format.duration;
  } catch (e) {
    throw refuse(`the ${format} audio could not be decoded (${(e as Error).message})`);
  }
  if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0) {
    // Browser recordings (MediaRecorder WebM) often state no duration; remuxing them writes one.
    throw refuse(`no duration could be read from this ${format} audio (it is damaged, empty, or does not state its length)`);
  }
  return seconds;
}
