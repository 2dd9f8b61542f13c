import type { Request, Response } from 'express';
import { GatewayError } from '@gateway/errors';
import type { MeterResult, RateMeter } from '@gateway/ratelimit';
import { INTERNAL } from '@gateway/service-kit';

const RATE = /^(\d+)\/(\d+)$/;

/**
 * Every message of a batch is a call against the account's request meter, as it would be sent alone. The edge
 * counted the request (the first message); the rest are counted here, against the limit the edge read for the
 * account (INTERNAL.rateLimit). Refused ones count too, as at the edge. Answers how many of the `extra` messages fit,
 * and leaves the rate headers as the last count saw them.
 */
export async function meterExtra(meter: RateMeter, req: Request, res: Response, accountId: string, extra: number): Promise<MeterResult[]> {
  if (extra === 0) return [];
  const rate = RATE.exec(String(req.headers[INTERNAL.rateLimit] ?? ''));
  // Only the edge sets this header (it drops any a client sends); without it the request came from somewhere else.
  if (!rate) throw new GatewayError('invalid_api_key', 'This listener only accepts requests from the gateway edge');
  const [limit, windowMs] = [Number(rate[1]), Number(rate[2])];
  let results: MeterResult[];
  try {
    // Concurrent hits ride one pipeline to Redis (the meter auto-pipelines): one round trip for the batch.
    results = await Promise.all(Array.from({ length: extra }, () => meter.hit(accountId, limit, windowMs)));
  } catch {
    throw new GatewayError('upstream_unavailable', 'The rate meter is unreachable; try again shortly', { headers: { 'retry-after': '1' } });
  }
  const last = results.reduce((a, b) => (b.remaining < a.remaining ? b : a));
  res.setHeader('x-ratelimit-remaining', String(last.remaining));
  res.setHeader('x-ratelimit-reset', String(last.resetAt));
  return results;
}
