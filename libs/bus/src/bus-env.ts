import fs from 'node:fs';
import type { SASLOptions } from 'kafkajs';
import type { KafkaBusOptions } from './kafka';
import type { OpenBusOptions } from './open';

/**
 * The variables the bus reads, as libs/config's schema has validated them (docs/operations.md lists them). The
 * bus takes them as plain values so that it depends on no configuration library.
 */
export interface BusEnv {
  BUS?: 'memory' | 'redis' | 'kafka';
  REDIS_URL?: string;
  GATEWAY_BUS_PREFIX?: string;
  KAFKA_BROKERS?: string;
  KAFKA_TOPIC_PREFIX?: string;
  KAFKA_TOPIC_PARTITIONS?: number;
  KAFKA_TOPIC_REPLICATION?: number;
  KAFKA_SSL?: 'true' | 'false';
  KAFKA_SSL_CA_FILE?: string;
  KAFKA_SASL_MECHANISM?: 'plain' | 'scram-sha-256' | 'scram-sha-512';
  KAFKA_SASL_USERNAME?: string;
  KAFKA_SASL_PASSWORD?: string;
}

/** `openBus`'s options from the environment: `openBus({ ...busOptionsFromEnv(env), metrics })`. */
export function busOptionsFromEnv(env: BusEnv): OpenBusOptions {
  return {
    kind: env.BUS,
    redisUrl: env.REDIS_URL,
    kafkaBrokers: env.KAFKA_BROKERS,
    prefix: env.GATEWAY_BUS_PREFIX,
    ...(env.KAFKA_BROKERS ? { kafka: kafkaOptionsFromEnv(env) } : {}),
  };
}

/**
 * TLS and SASL for the client, the installation's topic prefix, and how its topics are created. The CA file is read
 * here, at start, so a wrong path stops the process instead of failing its first connection.
 */
export function kafkaOptionsFromEnv(env: BusEnv): KafkaBusOptions {
  const ssl = env.KAFKA_SSL === 'true' ? (env.KAFKA_SSL_CA_FILE ? { ca: [fs.readFileSync(env.KAFKA_SSL_CA_FILE, 'utf8')] } : true) : undefined;
  const sasl: SASLOptions | undefined =
    env.KAFKA_SASL_MECHANISM && env.KAFKA_SASL_USERNAME && env.KAFKA_SASL_PASSWORD
      ? { mechanism: env.KAFKA_SASL_MECHANISM, username: env.KAFKA_SASL_USERNAME, password: env.KAFKA_SASL_PASSWORD }
      : undefined;
  return {
    ...(ssl || sasl ? { kafka: { ...(ssl ? { ssl } : {}), ...(sasl ? { sasl } : {}) } } : {}),
    ...(env.KAFKA_TOPIC_PREFIX ? { topicPrefix: env.KAFKA_TOPIC_PREFIX } : {}),
    createTopics: {
      ...(env.KAFKA_TOPIC_PARTITIONS ? { numPartitions: env.KAFKA_TOPIC_PARTITIONS } : {}),
      ...(env.KAFKA_TOPIC_REPLICATION ? { replicationFactor: env.KAFKA_TOPIC_REPLICATION } : {}),
    },
  };
}
