/**
 * The gateway's Kafka topics, created on a cluster that does not create topics on first use (production clusters,
 * and deploy/kafka's broker). `pnpm fleet` runs it before the services start; an operator runs it once per
 * installation (and after an upgrade that adds a topic), with the services' prefix and the cluster's settings:
 *
 *   node --import tsx deploy/kafka/topics.ts --brokers kafka-1:9092 [--prefix acme.] [--partitions 6] [--replication 3]
 *
 * KAFKA_BROKERS, KAFKA_TOPIC_PREFIX, KAFKA_TOPIC_PARTITIONS and KAFKA_TOPIC_REPLICATION are read when the flags are
 * absent, and KAFKA_SSL=true, KAFKA_SSL_CA_FILE, KAFKA_SASL_MECHANISM (plain, scram-sha-256, scram-sha-512),
 * KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD as the services read them. It creates what is missing and leaves existing topics alone, so it
 * is safe to run again (deploy/kafka/k8s/ runs it as a Job).
 */
import { type BusEnv, kafkaOptionsFromEnv, provisionKafkaTopics, provisionedTopicNames, type ProvisionTopicsOptions } from '@gateway/bus';
import { CONSUMER_GROUPS, TOPICS } from '@gateway/events';

export interface GatewayTopicsOptions {
  prefix?: string;
  numPartitions?: number;
  replicationFactor?: number;
  /** TLS and SASL, as the services connect. */
  kafka?: ProvisionTopicsOptions['kafka'];
}

const topics = Object.values(TOPICS);
const consumed = [...new Set(Object.values(CONSUMER_GROUPS).flat())];

/** Every topic name the gateway uses under `prefix`, dead-letter topics included (docs/operations.md lists them). */
export const gatewayTopicNames = (prefix = '') => provisionedTopicNames({ topics, consumed, prefix });

export function ensureGatewayTopics(brokers: string, opts: GatewayTopicsOptions = {}): Promise<string[]> {
  const list = brokers
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  return provisionKafkaTopics(list, { topics, consumed, ...opts });
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const flag = (name: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const number = (name: string) => (flag(name) === undefined ? undefined : Number(flag(name)));
  const env = process.env;
  const brokers = flag('brokers') ?? env.KAFKA_BROKERS;
  const prefix = flag('prefix') ?? env.KAFKA_TOPIC_PREFIX ?? '';
  const numberOf = (name: string, variable: string) => number(name) ?? (env[variable] ? Number(env[variable]) : undefined);
  const mechanism = env.KAFKA_SASL_MECHANISM;
  if (!brokers) {
    process.stderr.write('usage: topics.ts --brokers HOST:PORT[,...] [--prefix P] [--partitions N] [--replication N] (or KAFKA_BROKERS)\n');
    process.exit(2);
  }
  const mechanisms = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;
  if (
    mechanism &&
    !(mechanisms.includes(mechanism as BusEnv['KAFKA_SASL_MECHANISM'] & string) && env.KAFKA_SASL_USERNAME && env.KAFKA_SASL_PASSWORD)
  ) {
    process.stderr.write(
      `kafka topics: KAFKA_SASL_MECHANISM must be one of ${mechanisms.join(', ')}, with KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD\n`,
    );
    process.exit(2);
  }
  // TLS (trusting KAFKA_SSL_CA_FILE's CA when set) and SASL, built as a service builds them from the same variables.
  const kafka: ProvisionTopicsOptions['kafka'] = kafkaOptionsFromEnv({
    KAFKA_SSL: env.KAFKA_SSL === 'true' ? 'true' : undefined,
    KAFKA_SSL_CA_FILE: env.KAFKA_SSL_CA_FILE || undefined,
    KAFKA_SASL_MECHANISM: (mechanism || undefined) as BusEnv['KAFKA_SASL_MECHANISM'],
    KAFKA_SASL_USERNAME: env.KAFKA_SASL_USERNAME,
    KAFKA_SASL_PASSWORD: env.KAFKA_SASL_PASSWORD,
  }).kafka;
  ensureGatewayTopics(brokers, {
    prefix,
    numPartitions: numberOf('partitions', 'KAFKA_TOPIC_PARTITIONS'),
    replicationFactor: numberOf('replication', 'KAFKA_TOPIC_REPLICATION'),
    kafka,
  }).then(
    (created) => {
      process.stdout.write(
        `created ${created.length} of ${gatewayTopicNames(prefix).length} topics${created.length ? `: ${created.join(', ')}` : ''}\n`,
      );
    },
    (e: unknown) => {
      process.stderr.write(`kafka topics: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exit(1);
    },
  );
}
