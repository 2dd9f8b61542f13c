import type { Admin, Consumer, ConsumerConfig, ConsumerCrashEvent, ConsumerEvents, ConsumerGroupJoinEvent, Producer, ProducerConfig } from 'kafkajs';

/**
 * The part of a kafkajs client the adapter uses. A `Kafka` instance is one; naming the part keeps the adapter
 * honest about its reach and lets the unit tests drive it with a fake where no broker can run.
 */
export interface KafkaClient {
  producer(config: ProducerConfig): KafkaProducer;
  consumer(config: ConsumerConfig): KafkaConsumer;
  admin(): KafkaAdmin;
}

export type KafkaProducer = Pick<Producer, 'connect' | 'disconnect' | 'sendBatch'>;

export type KafkaAdmin = Pick<Admin, 'connect' | 'disconnect' | 'listTopics' | 'createTopics' | 'describeCluster'>;

export interface KafkaConsumer extends Pick<Consumer, 'connect' | 'subscribe' | 'run' | 'disconnect'> {
  readonly events: Pick<ConsumerEvents, 'CRASH' | 'GROUP_JOIN'>;
  on(eventName: ConsumerEvents['CRASH'], listener: (event: ConsumerCrashEvent) => void): () => void;
  on(eventName: ConsumerEvents['GROUP_JOIN'], listener: (event: ConsumerGroupJoinEvent) => void): () => void;
}
