import { signedHeaders, verifyWebhook, webhookSignature } from './sign';

const SECRET = 'whsec_test';
const ID = 'whd_test123';
const TS = 1_700_000_000;
const BODY = '{"request_id":"job_abc","status":"COMPLETED"}';
const AT = TS * 1000; // the verifier's clock, in ms, at the send time

describe('webhook signature', () => {
  it('is v1= and the hex HMAC-SHA256 of <id>.<timestamp>.<body> (vector computed with openssl dgst -hmac)', () => {
    expect(webhookSignature(SECRET, ID, TS, BODY)).toBe('v1=c8c4100423727758271cb0112c7eed255594b41de4e2cdf8dc321296d983e85d');
    expect(webhookSignature(SECRET, ID, TS, Buffer.from(BODY))).toBe(webhookSignature(SECRET, ID, TS, BODY));
  });

  it('sends the id, the timestamp and the signature with the JSON content type', () => {
    expect(signedHeaders({ secret: SECRET, id: ID, timestamp: TS, body: BODY })).toEqual({
      'Content-Type': 'application/json',
      'X-Gateway-Webhook-Id': ID,
      'X-Gateway-Webhook-Timestamp': String(TS),
      'X-Gateway-Webhook-Signature': 'v1=c8c4100423727758271cb0112c7eed255594b41de4e2cdf8dc321296d983e85d',
    });
  });
});

describe('verifyWebhook', () => {
  const headers = (over: Record<string, string> = {}) => ({
    'x-gateway-webhook-id': ID,
    'x-gateway-webhook-timestamp': String(TS),
    'x-gateway-webhook-signature': webhookSignature(SECRET, ID, TS, BODY),
    ...over,
  });

  it('accepts the request as sent, from Node headers, any header case, or fetch Headers', () => {
    expect(verifyWebhook(SECRET, headers(), BODY, { now: AT })).toEqual({ ok: true, id: ID, timestamp: TS });
    expect(verifyWebhook(SECRET, headers(), Buffer.from(BODY), { now: AT + 299_000 }).ok).toBe(true);
    expect(verifyWebhook(SECRET, signedHeaders({ secret: SECRET, id: ID, timestamp: TS, body: BODY }), BODY, { now: AT }).ok).toBe(true);
    expect(verifyWebhook(SECRET, new Headers(headers()), BODY, { now: AT }).ok).toBe(true);
  });

  it('rejects a tampered or re-serialised body', () => {
    expect(verifyWebhook(SECRET, headers(), BODY.replace('job_abc', 'job_abd'), { now: AT })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhook(SECRET, headers(), JSON.stringify(JSON.parse(BODY), null, 1), { now: AT })).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('rejects a wrong secret, another id, or a signature moved onto another timestamp', () => {
    expect(verifyWebhook('whsec_other', headers(), BODY, { now: AT })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhook(SECRET, headers({ 'x-gateway-webhook-id': 'whd_other' }), BODY, { now: AT }).ok).toBe(false);
    expect(verifyWebhook(SECRET, headers({ 'x-gateway-webhook-timestamp': String(TS + 1) }), BODY, { now: AT }).ok).toBe(false);
  });

  it('rejects a timestamp outside the tolerance, either way', () => {
    expect(verifyWebhook(SECRET, headers(), BODY, { now: AT + 301_000 })).toEqual({ ok: false, reason: 'stale_timestamp' });
    expect(verifyWebhook(SECRET, headers(), BODY, { now: AT - 301_000 })).toEqual({ ok: false, reason: 'stale_timestamp' });
    expect(verifyWebhook(SECRET, headers(), BODY, { now: AT + 61_000, toleranceSeconds: 60 })).toEqual({ ok: false, reason: 'stale_timestamp' });
  });

  it('rejects missing or malformed headers without throwing', () => {
    expect(verifyWebhook(SECRET, {}, BODY, { now: AT })).toEqual({ ok: false, reason: 'missing_headers' });
    expect(verifyWebhook(SECRET, headers({ 'x-gateway-webhook-timestamp': '17e8' }), BODY, { now: AT })).toEqual({
      ok: false,
      reason: 'bad_timestamp',
    });
    for (const signature of ['v1=', 'v1=zz', 'v0=c8c4100423727758271cb0112c7eed255594b41de4e2cdf8dc321296d983e85d', 'garbage']) {
      expect(verifyWebhook(SECRET, headers({ 'x-gateway-webhook-signature': signature }), BODY, { now: AT })).toEqual({
        ok: false,
        reason: 'bad_signature',
      });
    }
  });

  it('accepts any one matching v1 entry of several (a secret being rotated)', () => {
    const both = `v1=${'0'.repeat(64)}, ${webhookSignature(SECRET, ID, TS, BODY)}`;
    expect(verifyWebhook(SECRET, headers({ 'x-gateway-webhook-signature': both }), BODY, { now: AT }).ok).toBe(true);
  });
});
