import Redis, { type RedisOptions } from 'ioredis';
import type { MeterResult, RateMeter } from './port';
import { leasedHits } from './leases';
import { checkArgs } from './result';

export interface RedisMeterOptions {
  /** Key prefix; keys are `<prefix>{<account>}:<windowStart>`. Default `rl:`. */
  prefix?: string;
  /** The clock, in ms; injectable for tests. */
  now?: () => number;
  /** Options for the client this meter creates from a URL (ignored when a client is passed in). */
  redis?: RedisOptions;
  /**
   * How long numbers taken ahead for a busy account stay usable (leases.ts). Default 50 ms; 0 takes none ahead:
   * one round trip per hit, and every figure exact however many processes meter one account.
   */
  leaseMs?: number;
}

/**
 * INCRBY, then set the expiry if the key has none: on the first hit, or if it ever lost its TTL (a counter without
 * one would lock the account out forever). PTTL comes back so every instance reports the same reset time. A counter
 * below the range just taken lost its data (Redis restarted empty while a range was given back): it starts again
 * from that range.
 */
const TAKE_LUA = `
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
if count < tonumber(ARGV[3]) then
  redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[1])
  count = tonumber(ARGV[3])
end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;

const COMMAND = 'gatewayRateMeterTake';

type WithTake = Redis & { [COMMAND](key: string, ttlMs: number, delta: number, size: number): Promise<[number, number]> };

/**
 * One round trip per take of numbers: ioredis sends EVALSHA (EVAL the first time on each connection), never a
 * separate SCRIPT LOAD or EXPIRE; a busy account takes numbers ahead (leases.ts). The braces are a hash tag, keeping
 * an account's windows on one slot under Redis Cluster.
 */
export function createRedisMeter(urlOrClient: string | Redis, opts: RedisMeterOptions = {}): RateMeter {
  const owned = typeof urlOrClient === 'string';
  // On the request path: fail a hit fast rather than queue it behind a long reconnect.
  const redis = (
    owned ? new Redis(urlOrClient, { maxRetriesPerRequest: 2, commandTimeout: 1_000, enableAutoPipelining: true, ...opts.redis }) : urlOrClient
  ) as WithTake;
  redis.defineCommand(COMMAND, { numberOfKeys: 1, lua: TAKE_LUA });
  const leases = leasedHits(
    async (key, delta, size, ttlMs) => {
      const [count, pttl] = await redis[COMMAND](key, ttlMs, delta, size);
      return [Number(count), Number(pttl)];
    },
    { prefix: opts.prefix ?? 'rl:', now: opts.now ?? Date.now, leaseMs: opts.leaseMs ?? 50, reachable: () => redis.status === 'ready' },
  );

  return {
    async hit(accountId, limit, windowMs): Promise<MeterResult> {
      checkArgs(accountId, limit, windowMs);
      return await leases.hit(accountId, limit, windowMs);
    },

    async close() {
      leases.close();
      if (!owned) return;
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
