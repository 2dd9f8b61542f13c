import { needServer } from './servers';
import { within } from './wait';

export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/** Suites needing Redis: `REDIS.describe('…', () => …)`. */
export const REDIS = needServer('Redis', REDIS_URL, 6379);

/** The slice of an ioredis client these helpers use. */
export interface TestRedisClient {
  ping(): Promise<string>;
  keys(pattern: string): Promise<string[]>;
  del(...keys: string[]): Promise<number>;
  on(event: 'error', listener: (err: Error) => void): unknown;
  disconnect(): void;
}

/** Suites pass their own ioredis class, so this library needs no dependency and never pins a client version. */
export type TestRedisClass<R extends TestRedisClient> = new (url: string, options: { maxRetriesPerRequest: number; connectTimeout: number }) => R;

/** A connected client, or a failure naming the server: an absent Redis must not surface as every test timing out. */
export async function connectTestRedis<R extends TestRedisClient>(Redis: TestRedisClass<R>): Promise<R> {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, connectTimeout: 2_000 });
  redis.on('error', () => undefined); // the ping below reports it, once, with the address
  try {
    await within(redis.ping(), 3_000, `Redis at ${REDIS_URL}`);
  } catch (err) {
    redis.disconnect();
    // ioredis' own words ("Reached the max retries per request limit") do not say which server is missing.
    throw new Error(`Redis at ${REDIS_URL} unreachable: ${err instanceof Error ? err.message : String(err)}`);
  }
  return redis;
}

/** Each suite writes under its own random prefix, so suites sharing one Redis never see or delete each other's keys. */
export async function deleteKeysUnder(redis: TestRedisClient, prefix: string): Promise<void> {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
}

/** For the calling describe: a client connected before its tests, and its prefix's keys deleted after them. */
export function useTestRedis<R extends TestRedisClient>(Redis: TestRedisClass<R>, prefix: string): () => R {
  let redis: R | undefined;
  beforeAll(async () => {
    redis = await connectTestRedis(Redis);
  });
  afterAll(async () => {
    if (!redis) return;
    try {
      await deleteKeysUnder(redis, prefix);
    } finally {
      redis.disconnect();
    }
  });
  return () => {
    if (!redis) throw new Error('useTestRedis: no client (its connection in beforeAll failed, or beforeAll has not run)');
    return redis;
  };
}
