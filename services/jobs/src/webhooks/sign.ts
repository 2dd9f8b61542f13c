import crypto from 'node:crypto';

export const WEBHOOK_ID_HEADER = 'X-Gateway-Webhook-Id';
export const WEBHOOK_TIMESTAMP_HEADER = 'X-Gateway-Webhook-Timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'X-Gateway-Webhook-Signature';

const SCHEME = 'v1';
const DIGEST_BYTES = 32;

/** `v1=<hex>`: HMAC-SHA256 of `<id>.<timestamp>.<body>` keyed on the account's webhook secret, over the body's exact bytes. */
export function webhookSignature(secret: string, id: string, timestamp: number, body: string | Buffer): string {
  return `${SCHEME}=${digest(secret, id, String(timestamp), body).toString('hex')}`;
}

/** The headers of one attempt: the id is the delivery's (the same on every retry), the timestamp this attempt's send time. */
export function signedHeaders(args: { secret: string; id: string; timestamp: number; body: string | Buffer }): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    [WEBHOOK_ID_HEADER]: args.id,
    [WEBHOOK_TIMESTAMP_HEADER]: String(args.timestamp),
    [WEBHOOK_SIGNATURE_HEADER]: webhookSignature(args.secret, args.id, args.timestamp, args.body),
  };
}

/** Node's `req.headers`, a plain record in any case, or a fetch `Headers`. */
export type HeaderSource = Record<string, string | string[] | undefined> | { get(name: string): string | null };

export type VerifyResult =
  | { ok: true; id: string; timestamp: number }
  | { ok: false; reason: 'missing_headers' | 'bad_timestamp' | 'stale_timestamp' | 'bad_signature' };

/**
 * A receiver's check, over the raw body before any parsing (re-serialised JSON does not verify). The signature is checked
 * first and in constant time, so a forger learns nothing from which check failed; then the timestamp must lie within
 * `toleranceSeconds` of `now` (milliseconds, as Date.now() gives), which bounds how long a captured request can be replayed.
 * De-duplication by id is the receiver's job: it stores the ids it has processed.
 */
export function verifyWebhook(
  secret: string,
  headers: HeaderSource,
  rawBody: string | Buffer,
  opts: { toleranceSeconds?: number; now?: number } = {},
): VerifyResult {
  const id = header(headers, WEBHOOK_ID_HEADER);
  const stamp = header(headers, WEBHOOK_TIMESTAMP_HEADER);
  const signature = header(headers, WEBHOOK_SIGNATURE_HEADER);
  if (!id || !stamp || !signature) return { ok: false, reason: 'missing_headers' };
  if (!/^\d{1,12}$/.test(stamp)) return { ok: false, reason: 'bad_timestamp' };

  const expected = digest(secret, id, stamp, rawBody);
  // Several `v1=` entries may be sent while a secret is rotated; any one matching is enough.
  const matches = signature
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part.startsWith(`${SCHEME}=`))
    .map((part) => Buffer.from(part.slice(SCHEME.length + 1), 'hex'))
    .some((given) => given.length === DIGEST_BYTES && crypto.timingSafeEqual(given, expected));
  if (!matches) return { ok: false, reason: 'bad_signature' };

  const timestamp = Number(stamp);
  const nowSeconds = Math.floor((opts.now ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - timestamp) > (opts.toleranceSeconds ?? 300)) return { ok: false, reason: 'stale_timestamp' };
  return { ok: true, id, timestamp };
}

function digest(secret: string, id: string, timestamp: string, body: string | Buffer): Buffer {
  return crypto.createHmac('sha256', secret).update(`${id}.${timestamp}.`).update(body).digest();
}

function header(headers: HeaderSource, name: string): string | undefined {
  const get = (headers as { get?: unknown }).get;
  if (typeof get === 'function') return (get.call(headers, name) as string | null) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : value;
}
