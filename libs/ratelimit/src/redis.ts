import Redis, { type RedisOptions } from 'ioredis';
import type { MeterResult, RateMeter } from './port';
import { checkArgs, toResult, windowStart } from './result';

export interface RedisMeterOptions {
  /** Key prefix; keys are `<prefix>{<account>}:<windowStart>`. Default `rl:`. */
  prefix?: string;
  /** The clock, in ms; injectable for tests. */
  now?: () => number;
  /** Options for the client this meter creates from a URL (ignored when a client is passed in). */
  redis?: RedisOptions;
}

/**
 * INCR, then set the expiry if the key has none: on the first hit, or if it ever lost its TTL (a counter without
 * one would lock the account out forever). PTTL comes back so every instance reports the same reset time.
 */
const HIT_LUA = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

const COMMAND = 'gatewayRateMeterHit';

type WithHit = Redis & { [COMMAND](key: string, ttlMs: number): Promise<[number, number]> };

/**
 * One round trip per hit: ioredis sends EVALSHA (EVAL the first time on each connection), never a separate
 * SCRIPT LOAD or EXPIRE. The braces are a hash tag, keeping an account's windows on one slot under Redis Cluster.
 */
export function createRedisMeter(urlOrClient: string | Redis, opts: RedisMeterOptions = {}): RateMeter {
  const owned = typeof urlOrClient === 'string';
  // On the request path: fail a hit fast rather than queue it behind a long reconnect.
  const redis = (
    owned ? new Redis(urlOrClient, { maxRetriesPerRequest: 2, commandTimeout: 1_000, enableAutoPipelining: true, ...opts.redis }) : urlOrClient
  ) as WithHit;
  redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: HIT_LUA });
  const prefix = opts.prefix ?? 'rl:';
  const now = opts.now ?? Date.now;

  return {
    async hit(accountId, limit, windowMs): Promise<MeterResult> {
      checkArgs(accountId, limit, windowMs);
      const t = now();
      const start = windowStart(t, windowMs);
      const ttlMs = Math.max(1, start + windowMs - t);
      const [count, pttl] = await redis[COMMAND](`${prefix}{${accountId}}:${start}`, ttlMs);
      return toResult(Number(count), limit, t + Math.max(1, Number(pttl)), t);
    },

    async close() {
      if (!owned) return;
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
