import type { SpeechFormat, TranscriptFormat } from './types';

/** OpenAI's documented types for its speech formats; used where the upstream names none (or names no audio type). */
export const SPEECH_CONTENT_TYPE: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  opus: 'audio/opus',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  pcm: 'audio/pcm',
};

/** What OpenAI answers for each transcript format; used where the upstream names none. */
export const TRANSCRIPT_CONTENT_TYPE: Record<TranscriptFormat, string> = {
  json: 'application/json',
  verbose_json: 'application/json',
  text: 'text/plain; charset=utf-8',
  srt: 'text/plain; charset=utf-8',
  vtt: 'text/vtt; charset=utf-8',
};

const AUDIO_UPLOAD_TYPE: Record<string, string> = {
  wav: 'audio/wav',
  mp3: 'audio/mpeg',
  mpga: 'audio/mpeg',
  mpeg: 'audio/mpeg',
  m4a: 'audio/mp4',
  mp4: 'audio/mp4',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  opus: 'audio/ogg',
  flac: 'audio/flac',
  webm: 'audio/webm',
  aac: 'audio/aac',
  pcm: 'audio/pcm',
};

/**
 * The file name and type an uploaded recording goes out with. Servers such as OpenAI's pick the decoder by the
 * name's extension, so it must carry the container; the format is the client's word, so only letters and digits
 * reach the multipart header.
 */
export function audioUpload(format: string): { fileName: string; contentType: string } {
  const ext =
    format
      .toLowerCase()
      .replace(/[^a-z0-9]/g, '')
      .slice(0, 10) || 'bin';
  return { fileName: `audio.${ext}`, contentType: AUDIO_UPLOAD_TYPE[ext] ?? 'application/octet-stream' };
}

/** The image type the bytes themselves announce (PNG, JPEG, WEBP, GIF), if any: more trustworthy than a label. */
export function sniffImageType(bytes: Uint8Array): string | undefined {
  const starts = (sig: number[], at = 0) => bytes.length >= at + sig.length && sig.every((b, i) => bytes[at + i] === b);
  if (starts([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (starts([0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (starts([0x52, 0x49, 0x46, 0x46]) && starts([0x57, 0x45, 0x42, 0x50], 8)) return 'image/webp';
  if (starts([0x47, 0x49, 0x46, 0x38])) return 'image/gif';
  return undefined;
}
