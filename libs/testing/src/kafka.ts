import { needServer } from './servers';

/**
 * The brokers the Kafka suites use: KAFKA_BROKERS when set (.ci/run sets it after starting deploy/kafka's broker),
 * otherwise the port `node --import tsx deploy/kafka/broker.ts start` listens on by default.
 */
export const KAFKA_BROKERS = (process.env.KAFKA_BROKERS || '127.0.0.1:9092')
  .split(',')
  .map((b) => b.trim())
  .filter(Boolean);

/** Suites needing a Kafka broker: `KAFKA.describe('…', () => …)`; under CI=true an absent broker fails them. */
export const KAFKA = needServer('Kafka', `kafka://${KAFKA_BROKERS[0]}`, 9092);
