import Redis from 'ioredis';

/**
 * Answers every replica serves alike (the stats): computed by one of them and kept where all read it, so two
 * replicas never answer the same question differently within one cache period.
 */
export interface SharedAnswers {
  get(key: string): Promise<string | undefined>;
  /** Keeps `value` for `ttlMs` unless another replica stored one first; returns whichever is kept. */
  offer(key: string, value: string, ttlMs: number): Promise<string>;
  close(): Promise<void>;
}

/** The fleet's Redis. `prefix` keeps gateways that share one Redis apart (GATEWAY_METER_PREFIX). */
export function redisSharedAnswers(url: string, prefix = ''): SharedAnswers {
  // Bounded: with Redis away a call fails within a second and the replica answers from its own computation.
  const client = new Redis(url, { maxRetriesPerRequest: 1, commandTimeout: 1_000, connectTimeout: 1_000 });
  client.on('error', () => {});
  const at = (key: string) => `${prefix}catalogue:answer:${key}`;
  return {
    get: async (key) => (await client.get(at(key))) ?? undefined,
    async offer(key, value, ttlMs) {
      // SET NX GET: one round trip that stores ours only if none is there, and hands back the one that was.
      const earlier = (await client.call('SET', at(key), value, 'PX', String(ttlMs), 'NX', 'GET')) as string | null;
      return earlier ?? value;
    },
    close: async () => void client.disconnect(),
  };
}
