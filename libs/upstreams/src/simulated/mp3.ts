type Lame = typeof import('@breezystack/lamejs');
let loading: Promise<Lame> | undefined;
/**
 * The MP3 encoder (@breezystack/lamejs, a maintained build of lamejs, LAME in pure JavaScript) is ESM only: import()
 * loads it from this CommonJS code under tsx and under jest, once, on the first mp3 asked for.
 */
const lame = (): Promise<Lame> => (loading ??= import('@breezystack/lamejs'));

/** Mono speech at 64 kb/s: at the simulator's 24 kHz that is MPEG-2 Layer III, as small as speech needs. */
const KBPS = 64;

const bytesOf = (a: Uint8Array | Int8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/**
 * Encodes 16-bit mono PCM chunks to MP3 as they come: each chunk's frames are yielded as soon as the encoder has
 * them (a short chunk may yield none yet), the encoder's last frames at the end. Nothing but frames: no ID3 tag.
 */
export async function* mp3Of(pcm: AsyncIterable<Buffer>, sampleRate: number): AsyncIterable<Uint8Array> {
  const { Mp3Encoder } = await lame();
  const encoder = new Mp3Encoder(1, sampleRate, KBPS);
  for await (const chunk of pcm) {
    const samples = new Int16Array(chunk.buffer, chunk.byteOffset, chunk.byteLength / 2);
    const out = encoder.encodeBuffer(samples);
    if (out.length > 0) yield bytesOf(out);
  }
  const last = encoder.flush();
  if (last.length > 0) yield bytesOf(last);
}
