import { readEnv } from './env';

describe('the Kafka variables', () => {
  const kafka = { KAFKA_BROKERS: 'k1:9093,k2:9093' };

  it('reads TLS, SASL, the prefix and the topic settings, numbers as numbers', () => {
    const env = readEnv({
      ...kafka,
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA_FILE: '/etc/kafka/ca.pem',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'gateway',
      KAFKA_SASL_PASSWORD: 'secret',
      KAFKA_TOPIC_PREFIX: 'gw-prod.',
      KAFKA_TOPIC_PARTITIONS: '12',
      KAFKA_TOPIC_REPLICATION: '3',
    });
    expect(env).toMatchObject({ KAFKA_SSL: 'true', KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_TOPIC_PARTITIONS: 12, KAFKA_TOPIC_REPLICATION: 3 });
  });

  it.each([
    [
      { KAFKA_SASL_MECHANISM: 'scram-sha-256' },
      /KAFKA_SASL_USERNAME: required with KAFKA_SASL_MECHANISM=scram-sha-256\n {2}KAFKA_SASL_PASSWORD: required/,
    ],
    [{ KAFKA_SASL_USERNAME: 'gateway', KAFKA_SASL_PASSWORD: 'secret' }, /KAFKA_SASL_USERNAME: set without KAFKA_SASL_MECHANISM/],
    [{ KAFKA_SASL_MECHANISM: 'gssapi' }, /KAFKA_SASL_MECHANISM/],
    [{ KAFKA_SSL: 'yes' }, /KAFKA_SSL/],
    [{ KAFKA_SSL_CA_FILE: '/ca.pem' }, /KAFKA_SSL_CA_FILE: set without KAFKA_SSL=true/],
    [{ KAFKA_TOPIC_PARTITIONS: '0' }, /KAFKA_TOPIC_PARTITIONS/],
    [{ KAFKA_TOPIC_REPLICATION: 'three' }, /KAFKA_TOPIC_REPLICATION/],
    [{ KAFKA_TOPIC_PREFIX: 'gw/prod' }, /KAFKA_TOPIC_PREFIX: letters, digits and \. _ - only/],
  ])('refuses %j', (vars, message) => {
    expect(() => readEnv({ ...kafka, ...vars })).toThrow(message);
  });
});
