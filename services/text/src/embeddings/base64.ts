/**
 * An embedding as OpenAI's base64 encoding: the float32 values' little-endian bytes, which is what the official
 * clients decode (they request base64 by default). Written byte by byte so the host's endianness never matters.
 */
export function float32Base64(vector: number[]): string {
  const buf = Buffer.allocUnsafe(vector.length * 4);
  for (let i = 0; i < vector.length; i++) buf.writeFloatLE(vector[i], i * 4);
  return buf.toString('base64');
}
