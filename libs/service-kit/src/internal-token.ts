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
 */
export function requireInternalToken(token: string | undefined): RequestHandler {
  const expected = token ? digest(token) : undefined;
  return (req, _res, next) => {
    if (expected && matchesSecret(req.headers[INTERNAL.token], expected)) return next();
    next(new GatewayError('invalid_api_key', 'This listener only accepts requests from the gateway edge'));
  };
}
