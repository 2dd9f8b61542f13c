import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import { GatewayError } from '@gateway/errors';
import { INTERNAL } from './context';

const digest = (s: string): Buffer => crypto.createHash('sha256').update(s).digest();

/**
 * Whether `given` is the secret whose SHA-256 is `expected`, in time that depends on neither: both sides are
 * compared as digests of one fixed length, so neither a wrong value nor a wrong length answers any faster.
 */
export function matchesSecret(given: unknown, expected: Buffer): boolean {
  return typeof given === 'string' && crypto.timingSafeEqual(digest(given), expected);
}

/**
 * The fleet's internal routes and edge-forwarded requests must carry the shared token. Without one configured
 * nothing passes: a fleet service cannot start without it (readFleetEnv), and a listener built without it (the
 * embedded billing's internal router, never served) refuses everyone rather than trusting everyone.
 * `accepted` (GATEWAY_INTERNAL_TOKEN_ACCEPTED) is one more token let through and never sent: while the token
 * rotates, pods that already send the new one and pods that still send the old one are both understood.
 */
export function requireInternalToken(token: string | undefined, accepted?: string): RequestHandler {
  const expected = [token, accepted].filter((t): t is string => !!t).map(digest);
  return (req, _res, next) => {
    const given = req.headers[INTERNAL.token];
    // Every digest is compared, so the answer takes as long whichever token (if any) matched.
    const matched = expected.map((e) => matchesSecret(given, e));
    if (token && matched.includes(true)) return next();
    next(new GatewayError('invalid_api_key', 'This listener only accepts requests from the gateway edge'));
  };
}
