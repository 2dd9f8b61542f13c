/** One MPEG audio frame header, as decoded from its four bytes. */
export interface Mp3Frame {
  /** 1 (MPEG-1), 2 (MPEG-2) or 2.5. */
  version: 1 | 2 | 2.5;
  layer: 1 | 2 | 3;
  kbps: number;
  sampleRate: number;
  mono: boolean;
  /** Bytes of the whole frame, header included. */
  length: number;
  /** Samples of audio the frame decodes to. */
  samples: number;
}

const KBPS_L3: Record<1 | 2, number[]> = {
  1: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
const RATES: Record<1 | 2 | 2.5, number[]> = { 1: [44100, 48000, 32000], 2: [22050, 24000, 16000], 2.5: [11025, 12000, 8000] };

/**
 * The Layer III frame header at `at` (ISO 11172-3 / 13818-3), or a reason it is none. Written from the standard,
 * not from the encoder, for tests: a file whose every frame decodes here, back to back to its last byte, is MP3.
 */
export function mp3FrameAt(b: Buffer, at: number): Mp3Frame | string {
  if (b.length < at + 4) return 'fewer than 4 bytes';
  if (b[at] !== 0xff || (b[at + 1] & 0xe0) !== 0xe0) return 'no frame sync (11 set bits)';
  const version = ({ 0: 2.5, 2: 2, 3: 1 } as Record<number, 1 | 2 | 2.5 | undefined>)[(b[at + 1] >> 3) & 3];
  if (version === undefined) return 'a reserved MPEG version';
  const layer = ({ 1: 3, 2: 2, 3: 1 } as Record<number, 1 | 2 | 3 | undefined>)[(b[at + 1] >> 1) & 3];
  if (layer !== 3) return `layer ${layer ?? 'reserved'}, not III`;
  const kbps = KBPS_L3[version === 1 ? 1 : 2][b[at + 2] >> 4];
  if (!kbps) return 'a free or bad bitrate index';
  const sampleRate = RATES[version][(b[at + 2] >> 2) & 3];
  if (!sampleRate) return 'a reserved sample rate index';
  const padding = (b[at + 2] >> 1) & 1;
  const samples = version === 1 ? 1152 : 576;
  const length = Math.floor(((samples / 8) * kbps * 1000) / sampleRate) + padding;
  return { version, layer, kbps, sampleRate, mono: b[at + 3] >> 6 === 3, length, samples };
}

/** Every frame of an MP3 stream with no tags, back to back; throws at the first byte that does not start one. */
export function mp3Frames(b: Buffer): Mp3Frame[] {
  const frames: Mp3Frame[] = [];
  for (let at = 0; at < b.length; ) {
    const f = mp3FrameAt(b, at);
    if (typeof f === 'string') throw new Error(`no MP3 frame at byte ${at}: ${f}`);
    frames.push(f);
    at += f.length;
  }
  return frames;
}
