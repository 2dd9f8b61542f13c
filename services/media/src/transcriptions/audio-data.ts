import { GatewayError } from '@gateway/errors';

/** Standard or URL-safe alphabet, padded or not: every form Node decodes, and nothing it would silently skip. */
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * input_audio.data as bytes: bare base64 or a `data:<type>;base64,` URL (the type is ignored: input_audio.format
 * names the container). Whitespace is dropped, so line-wrapped base64 decodes too. Node's decoder skips characters
 * outside the alphabet instead of failing, so they are refused here first: a typo must not become other audio.
 */
export function decodeAudioData(data: string): Buffer {
  let b64 = data;
  if (/^data:/i.test(b64)) {
    const comma = b64.indexOf(',');
    if (comma < 0 || !/;base64$/i.test(b64.slice(0, comma))) {
      throw new GatewayError('invalid_request', 'Invalid request: input_audio.data: a data: URL must be base64 ("data:audio/wav;base64,...")');
    }
    b64 = b64.slice(comma + 1);
  }
  b64 = b64.replace(/\s+/g, '');
  const padded = b64.endsWith('=');
  if (b64.length === 0 || !BASE64.test(b64) || b64.length % 4 === 1 || (padded && b64.length % 4 !== 0)) {
    throw new GatewayError('invalid_request', 'Invalid request: input_audio.data is not valid base64');
  }
  return Buffer.from(b64, 'base64');
}
