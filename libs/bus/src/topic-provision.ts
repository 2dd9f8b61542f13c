import type { KafkaConfig } from 'kafkajs';
import { kafkaJs } from './kafka';
import { defaultDeadLetterTopic } from './kafka-codec';

export interface ProvisionTopicsOptions {
  /** Every topic the installation publishes to. */
  topics: readonly string[];
  /** The topics some group consumes: each gets its dead-letter topic beside it. */
  consumed: readonly string[];
  /** KAFKA_TOPIC_PREFIX: the same prefix the services are given. */
  prefix?: string;
  numPartitions?: number;
  /** Absent: the broker's default.replication.factor. */
  replicationFactor?: number;
  /** Client settings (ssl, sasl); the brokers come from the argument. */
  kafka?: Omit<KafkaConfig, 'brokers'>;
}

/** Every topic an installation needs, prefixed: the topics themselves and a dead-letter topic per consumed one. */
export function provisionedTopicNames(opts: Pick<ProvisionTopicsOptions, 'topics' | 'consumed' | 'prefix'>): string[] {
  const prefix = opts.prefix ?? '';
  const names = [...opts.topics.map((t) => prefix + t), ...opts.consumed.map((t) => defaultDeadLetterTopic(prefix + t))];
  return [...new Set(names)];
}

/**
 * Creates the topics that are missing, for a cluster that does not create them on first use (auto.create.topics.enable
 * is off on deploy/kafka's broker, as it should be in production): a publish to a missing topic fails, and so does a
 * dead letter. Topics that exist are left as they are. Resolves with the names it created.
 */
export async function provisionKafkaTopics(brokers: string[], opts: ProvisionTopicsOptions): Promise<string[]> {
  const { Kafka, logLevel } = kafkaJs();
  const admin = new Kafka({ logLevel: logLevel.WARN, clientId: 'gateway-provision', ...opts.kafka, brokers }).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = provisionedTopicNames(opts).filter((t) => !existing.has(t));
    if (missing.length)
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((topic) => ({
          topic,
          numPartitions: opts.numPartitions ?? 3,
          ...(opts.replicationFactor ? { replicationFactor: opts.replicationFactor } : {}),
        })),
      });
    return missing;
  } finally {
    await admin.disconnect();
  }
}
