import type { EventBus } from './port';
import { logBusError, type BusErrorHandler } from './errors';
import { countingFaults, type BusMetrics } from './fault-metric';
import { createMemoryBus, type MemoryBusOptions } from './memory';
import { createRedisBus, type RedisBusOptions } from './redis-streams';
import { createKafkaBus, type KafkaBusOptions } from './kafka';
import { withTracing } from './tracing';

export interface OpenBusOptions {
  /** Defaults to the most capable adapter configured: kafka if brokers are given, else redis if a URL is, else memory. */
  kind?: 'memory' | 'redis' | 'kafka';
  redisUrl?: string;
  /** An array, or the comma-separated form of the KAFKA_BROKERS variable. */
  kafkaBrokers?: string[] | string;
  /** Key prefix of the Redis Streams adapter (GATEWAY_BUS_PREFIX), so gateways sharing a Redis stay apart. */
  prefix?: string;
  onError?: BusErrorHandler;
  /** Counts every fault the adapters report (`gateway_bus_faults_total`), besides `onError` (default: the log). */
  metrics?: BusMetrics;
  memory?: MemoryBusOptions;
  redis?: RedisBusOptions;
  kafka?: KafkaBusOptions;
}

/** The configured adapter, with trace context carried across it. */
export function openBus(opts: OpenBusOptions = {}): EventBus {
  return withTracing(openAdapter(opts));
}

function openAdapter(opts: OpenBusOptions): EventBus {
  const brokers = (typeof opts.kafkaBrokers === 'string' ? opts.kafkaBrokers.split(',') : (opts.kafkaBrokers ?? []))
    .map((b) => b.trim())
    .filter(Boolean);
  const redisUrl = opts.redisUrl?.trim() || undefined;
  const kind = opts.kind ?? (brokers.length ? 'kafka' : redisUrl ? 'redis' : 'memory');
  const onError = opts.onError || opts.metrics ? { onError: countingFaults(opts.metrics, opts.onError ?? logBusError) } : {};
  switch (kind) {
    case 'memory':
      return createMemoryBus({ ...onError, ...opts.memory });
    case 'redis':
      if (!redisUrl) throw new Error('bus: kind "redis" needs a Redis URL (set REDIS_URL)');
      return createRedisBus(redisUrl, { ...onError, ...(opts.prefix ? { prefix: opts.prefix } : {}), ...opts.redis });
    case 'kafka':
      if (!brokers.length) throw new Error('bus: kind "kafka" needs at least one broker (set KAFKA_BROKERS, e.g. "kafka-1:9092,kafka-2:9092")');
      return createKafkaBus(brokers, { ...onError, ...opts.kafka });
    default:
      throw new Error(`bus: unknown kind "${String(kind)}" (expected memory, redis or kafka)`);
  }
}
