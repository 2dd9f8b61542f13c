import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { busOptionsFromEnv, kafkaOptionsFromEnv } from './bus-env';

describe('the bus options from the environment', () => {
  it('maps the Redis variables, and adds no Kafka options without brokers', () => {
    expect(busOptionsFromEnv({ BUS: 'redis', REDIS_URL: 'redis://r:6379', GATEWAY_BUS_PREFIX: 'gw:' })).toEqual({
      kind: 'redis',
      redisUrl: 'redis://r:6379',
      kafkaBrokers: undefined,
      prefix: 'gw:',
    });
  });

  it('gives kafkajs TLS with the CA read from its file, SASL, and the topics the prefix and settings', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bus-env-'));
    const ca = path.join(dir, 'ca.pem');
    fs.writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
    try {
      expect(
        busOptionsFromEnv({
          BUS: 'kafka',
          KAFKA_BROKERS: 'k1:9093',
          KAFKA_SSL: 'true',
          KAFKA_SSL_CA_FILE: ca,
          KAFKA_SASL_MECHANISM: 'scram-sha-256',
          KAFKA_SASL_USERNAME: 'gateway',
          KAFKA_SASL_PASSWORD: 'secret',
          KAFKA_TOPIC_PREFIX: 'gw-eu.',
          KAFKA_TOPIC_PARTITIONS: 12,
          KAFKA_TOPIC_REPLICATION: 3,
        }).kafka,
      ).toEqual({
        kafka: {
          ssl: { ca: [fs.readFileSync(ca, 'utf8')] },
          sasl: { mechanism: 'scram-sha-256', username: 'gateway', password: 'secret' },
        },
        topicPrefix: 'gw-eu.',
        createTopics: { numPartitions: 12, replicationFactor: 3 },
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('trusts the system CAs when TLS is on without a CA file, and sends no credentials without a mechanism', () => {
    expect(kafkaOptionsFromEnv({ KAFKA_SSL: 'true' })).toEqual({ kafka: { ssl: true }, createTopics: {} });
    expect(kafkaOptionsFromEnv({ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' })).toEqual({
      kafka: { sasl: { mechanism: 'plain', username: 'u', password: 'p' } },
      createTopics: {},
    });
    expect(kafkaOptionsFromEnv({})).toEqual({ createTopics: {} });
  });

  it('stops the start when the CA file cannot be read', () => {
    expect(() => kafkaOptionsFromEnv({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: '/nonexistent/ca.pem' })).toThrow(/ENOENT/);
  });
});
