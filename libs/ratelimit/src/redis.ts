import Redis from 'ioredis';
import type { MeterResult, RateMeter } from './port';
import { result } from './memory';

/** INCR the window's counter and set its expiry on the first hit: one atomic round trip per request. */
const HIT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`;

export function createRedisMeter(urlOrClient: string | Redis, prefix = 'rl:'): RateMeter {
  const redis = typeof urlOrClient === 'string' ? new Redis(urlOrClient, { maxRetriesPerRequest: 2, enableAutoPipelining: true }) : urlOrClient;
  redis.defineCommand('gatewayMeterHit', { numberOfKeys: 1, lua: HIT });
  const owned = typeof urlOrClient === 'string';
  return {
    async hit(accountId, limit, windowMs): Promise<MeterResult> {
      const t = Date.now();
      const start = Math.floor(t / windowMs) * windowMs;
      const count = Number(await (redis as unknown as { gatewayMeterHit(key: string, ttl: number): Promise<number> }).gatewayMeterHit(`${prefix}{${accountId}}:${windowMs}:${start}`, windowMs + 1000));
      return result(count, limit, start + windowMs, t);
    },
    async close() {
      if (owned) await redis.quit().catch(() => undefined);
    },
  };
}
