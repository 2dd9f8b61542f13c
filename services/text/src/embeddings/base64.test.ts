import { float32Base64 } from './base64';

/** Exactly how the official openai client decodes a base64 embedding (internal/utils/base64.ts, Node branch). */
const decodeLikeOpenAI = (b64: string) => {
  const buf = Buffer.from(b64, 'base64');
  return Array.from(new Float32Array(buf.buffer, buf.byteOffset, buf.length / Float32Array.BYTES_PER_ELEMENT));
};

describe('float32Base64', () => {
  it('round-trips through Float32Array to the float32 value of each component', () => {
    const vector = [0, 1, -1, 0.1, -0.3333333333, 1e-30, 3.4e38, Math.SQRT1_2];
    const decoded = decodeLikeOpenAI(float32Base64(vector));
    expect(decoded).toEqual(Array.from(Float32Array.from(vector)));
  });

  it('writes little-endian IEEE 754 single precision, 4 bytes per value', () => {
    // 1.0f is 0x3f800000; little-endian bytes 00 00 80 3f.
    expect(Buffer.from(float32Base64([1]), 'base64')).toEqual(Buffer.from([0x00, 0x00, 0x80, 0x3f]));
    expect(Buffer.from(float32Base64([0.5, -2]), 'base64').length).toBe(8);
  });

  it('encodes an empty vector as an empty string', () => {
    expect(float32Base64([])).toBe('');
  });
});
