import Redis from 'ioredis';
import type { StoragePing } from './checks';

/** A Redis PING for the storage check, on its own connection that never queues commands while Redis is away. */
export function redisPing(url: string): StoragePing & { close(): Promise<void> } {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, connectTimeout: 3_000 });
  client.on('error', () => {}); // reported through the check's failed ping, not as an unhandled event
  return {
    name: 'redis',
    async ping() {
      if (client.status === 'wait' || client.status === 'end') await client.connect();
      await client.ping();
    },
    close: async () => void client.disconnect(),
  };
}
