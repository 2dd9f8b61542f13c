import type { RequestHandler } from 'express';
import { GatewayError } from '@gateway/errors';
import type { MeterResult, RateMeter } from '@gateway/ratelimit';
import type { Response } from 'express';
import { INTERNAL } from '@gateway/service-kit';
import { extractKey } from './extract-key';
import type { KeyCache } from './key-cache';

/**
 * Keyed routes: authenticate, meter the account, set the rate headers (errors included), and pass
 * account, key and request id inward as internal headers.
 */
export function authenticate(keys: KeyCache, meter: RateMeter, internalToken: string | undefined): RequestHandler {
  return async (req, res, next) => {
    try {
      const raw = extractKey(req.headers);
      if (!raw) throw new GatewayError('invalid_api_key', 'Missing API key: send Authorization: Bearer sk_live_...');
      if (!raw.startsWith('sk_live_')) throw new GatewayError('invalid_api_key', 'Malformed API key: keys start with sk_live_');
      const identity = await keys.verify(raw);
      if (!identity) throw new GatewayError('invalid_api_key', 'Invalid API key: unknown, revoked or expired');

      await meterRequest(meter, res, identity.accountId, identity.rateLimit);
      req.headers[INTERNAL.accountId] = identity.accountId;
      req.headers[INTERNAL.keyId] = identity.keyId;
      req.headers[INTERNAL.rateLimit] = `${identity.rateLimit.requests}/${identity.rateLimit.intervalMs}`;
      if (internalToken) req.headers[INTERNAL.token] = internalToken;
      next();
    } catch (e) {
      next(e);
    }
  };
}

/**
 * Counts one request against a meter (refused ones too), sets the rate headers, and refuses past the limit with
 * 429 rate_limited. Keyed routes meter the account; public routes the client address. A meter that cannot answer
 * (Redis away) refuses the request with 503 upstream_unavailable.
 */
export async function meterRequest(meter: RateMeter, res: Response, key: string, rate: { requests: number; intervalMs: number }): Promise<void> {
  let m: MeterResult;
  try {
    m = await meter.hit(key, rate.requests, rate.intervalMs);
  } catch {
    // Fail closed (docs/reliability.md): without its meter the edge cannot tell a caller within its limit
    // from one past it, and in the fleet that Redis also carries the settles. A retryable 503 at once, never a hang.
    throw new GatewayError('upstream_unavailable', 'The rate meter is unreachable; try again shortly', { headers: { 'retry-after': '1' } });
  }
  res.setHeader('x-ratelimit-limit', String(m.limit));
  res.setHeader('x-ratelimit-remaining', String(m.remaining));
  res.setHeader('x-ratelimit-reset', String(m.resetAt));
  if (!m.allowed) {
    throw new GatewayError('rate_limited', `Rate limit of ${m.limit} requests exceeded; retry in ${m.retryAfter} s`, {
      headers: { 'retry-after': String(m.retryAfter), 'x-gateway-limit-type': 'requests' },
    });
  }
}
