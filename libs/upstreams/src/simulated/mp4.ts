/**
 * The smallest playable MP4 of a given length: one AAC-LC track of silence (8 kHz mono, canned silent frames).
 * There is no picture, which is all an offline simulator can truthfully make without a video encoder; players and
 * probes (music-metadata, ffprobe) read the exact length from mvhd/tkhd/mdhd.
 */

/** Movie time in milliseconds: whole seconds and the usual fractions (2.5 s) are exact. */
const TIMESCALE = 1000;
/** Media time is the sample rate, so mdhd's duration is a sample count (what music-metadata divides). */
const SAMPLE_RATE = 8000;
const SAMPLES_PER_FRAME = 1024;
/** AudioSpecificConfig: object type 2 (AAC-LC), frequency index 11 (8 kHz), one channel. */
const AAC_CONFIG = Buffer.from([0x15, 0x88]);
/** One AAC-LC mono frame of 1024 zero samples, the canned frame players and muxers (hls.js) insert for gaps. */
const SILENT_FRAME = Buffer.from([0x00, 0xc8, 0x00, 0x80, 0x23, 0x80]);

function box(type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.length, 0);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, body]);
}

/** A "full box": version and 24 bits of flags before the payload. */
function fullBox(type: string, version: number, flags: number, ...payload: Buffer[]): Buffer {
  const vf = Buffer.alloc(4);
  vf.writeUInt32BE(((version & 0xff) << 24) | (flags & 0xffffff), 0);
  return box(type, vf, ...payload);
}

function u32(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  for (const [i, v] of values.entries()) b.writeUInt32BE(v >>> 0, i * 4);
  return b;
}

function u16(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 2);
  for (const [i, v] of values.entries()) b.writeUInt16BE(v & 0xffff, i * 2);
  return b;
}

/** The identity transform every track and movie header carries. */
const MATRIX = u32(0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000);

/** An MPEG-4 descriptor (tag, one-byte length: every one here is under 128 bytes). */
const descriptor = (tag: number, ...payload: Buffer[]) => {
  const body = Buffer.concat(payload);
  return Buffer.concat([Buffer.from([tag, body.length]), body]);
};

/** The mp4a sample entry: how to decode the track (AAC-LC, 8 kHz, mono). */
function mp4a(): Buffer {
  const esds = fullBox(
    'esds',
    0,
    0,
    descriptor(
      0x03,
      u16(1),
      Buffer.from([0]),
      // Object type 0x40 (MPEG-4 audio), stream type 5 (audio) with the upstream bit clear and the reserved bit set.
      descriptor(0x04, Buffer.from([0x40, 0x15, 0, 0, 0]), u32(0, 0), descriptor(0x05, AAC_CONFIG)),
      descriptor(0x06, Buffer.from([0x02])),
    ),
  );
  // Six reserved bytes, data reference 1, then channels 1, 16-bit, rate in 16.16.
  return box('mp4a', Buffer.alloc(6), u16(1), u32(0, 0), u16(1, 16, 0, 0), u32(SAMPLE_RATE << 16), esds);
}

/** An MP4 of `seconds` (to the sample); throws on a length that is not positive and finite. */
export function silentMp4(seconds: number): Buffer {
  if (!(seconds > 0) || !Number.isFinite(seconds)) throw new RangeError(`not a video length: ${seconds}`);
  const movieDuration = Math.round(seconds * TIMESCALE);
  const samples = Math.round(seconds * SAMPLE_RATE);
  if (samples > 0xffffffff) throw new RangeError(`too long for version-0 headers: ${seconds}`);
  const frames = Math.ceil(samples / SAMPLES_PER_FRAME);

  const ftyp = box('ftyp', Buffer.from('isom', 'latin1'), u32(0x200), Buffer.from('isomiso2mp41', 'latin1'));
  const moov = (mdatOffset: number) => {
    const mvhd = fullBox('mvhd', 0, 0, u32(0, 0, TIMESCALE, movieDuration, 0x00010000), u16(0x0100, 0), u32(0, 0), MATRIX, Buffer.alloc(24), u32(2));
    // Flags 3: enabled and in the movie; volume 1.0.
    const tkhd = fullBox('tkhd', 0, 0x3, u32(0, 0, 1, 0, movieDuration, 0, 0), u16(0, 0, 0x0100, 0), MATRIX, u32(0, 0));
    // Language "und", packed as three 5-bit letters.
    const mdhd = fullBox('mdhd', 0, 0, u32(0, 0, SAMPLE_RATE, samples), u16(0x55c4, 0));
    const hdlr = fullBox('hdlr', 0, 0, u32(0), Buffer.from('soun', 'latin1'), Buffer.alloc(12), Buffer.from('SoundHandler\0', 'latin1'));
    const smhd = fullBox('smhd', 0, 0, u16(0, 0));
    // One self-contained data reference (flag 1: the media is in this file).
    const dinf = box('dinf', fullBox('dref', 0, 0, u32(1), fullBox('url ', 0, 1)));
    // Every frame the same size and length, all in one chunk at the start of mdat's payload.
    const stbl = box(
      'stbl',
      fullBox('stsd', 0, 0, u32(1), mp4a()),
      fullBox('stts', 0, 0, u32(1, frames, SAMPLES_PER_FRAME)),
      fullBox('stsc', 0, 0, u32(1, 1, frames, 1)),
      fullBox('stsz', 0, 0, u32(SILENT_FRAME.length, frames)),
      fullBox('stco', 0, 0, u32(1, mdatOffset)),
    );
    const trak = box('trak', tkhd, box('mdia', mdhd, hdlr, box('minf', smhd, dinf, stbl)));
    return box('moov', mvhd, trak);
  };
  const mdatOffset = ftyp.length + moov(0).length + 8;
  return Buffer.concat([ftyp, moov(mdatOffset), box('mdat', ...Array.from({ length: frames }, () => SILENT_FRAME))]);
}
