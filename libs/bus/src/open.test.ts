import { openBus, type BusMetrics } from './index';
import { waitFor } from '@gateway/testing';

describe('openBus', () => {
  const lazyRedis = { redis: { redis: { lazyConnect: true } } };

  it('picks memory when nothing is configured', async () => {
    const bus = openBus();
    expect(bus.kind).toBe('memory');
    await bus.close();
  });

  it('picks redis when only a Redis URL is given, kafka when brokers are given', async () => {
    const redis = openBus({ redisUrl: 'redis://127.0.0.1:1', ...lazyRedis });
    const kafka = openBus({ redisUrl: 'redis://127.0.0.1:1', kafkaBrokers: 'k1:9092, k2:9092', ...lazyRedis });
    expect(redis.kind).toBe('redis');
    expect(kafka.kind).toBe('kafka');
    await Promise.all([redis.close(), kafka.close()]);
  });

  it('honours an explicit kind over what is configured', async () => {
    const bus = openBus({ kind: 'memory', redisUrl: 'redis://127.0.0.1:1', kafkaBrokers: ['k1:9092'] });
    expect(bus.kind).toBe('memory');
    await bus.close();
  });

  it('names the missing setting when the chosen kind cannot be built', () => {
    expect(() => openBus({ kind: 'redis' })).toThrow(/REDIS_URL/);
    expect(() => openBus({ kind: 'redis', redisUrl: '  ' })).toThrow(/REDIS_URL/);
    expect(() => openBus({ kind: 'kafka', kafkaBrokers: ' , ' })).toThrow(/KAFKA_BROKERS/);
    expect(() => openBus({ kind: 'carrier-pigeon' as never })).toThrow(/unknown kind/);
  });

  it('counts every fault in gateway_bus_faults_total, then hands it to onError', async () => {
    const counted: Record<string, string>[] = [];
    const metrics: BusMetrics = {
      counter: (name) => {
        expect(name).toBe('gateway_bus_faults_total');
        return { inc: (labels) => void counted.push(labels) };
      },
    };
    const logged: string[] = [];
    const bus = openBus({ metrics, onError: (_err, ctx) => void logged.push(ctx.action), memory: { maxAttempts: 2, retryBaseMs: 1 } });
    await bus.subscribe('billing', ['billing.holds'], async () => {
      throw new Error('storage down');
    });
    await bus.publish('billing.holds', { id: 'h1:close', type: 'hold.close.v1', key: 'h1', data: null });
    await waitFor(() => logged.length === 2, 'the retry and the drop');
    expect(counted).toEqual([
      { adapter: 'memory', action: 'will-retry', group: 'billing', topic: 'billing.holds' },
      { adapter: 'memory', action: 'dropped', group: 'billing', topic: 'billing.holds' },
    ]);
    expect(logged).toEqual(['will-retry', 'dropped']);
    await bus.close();
  });
});
