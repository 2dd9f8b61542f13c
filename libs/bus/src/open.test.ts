import { openBus } from './index';

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
});
