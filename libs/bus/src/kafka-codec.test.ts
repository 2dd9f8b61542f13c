import { Partitioners, type PartitionMetadata } from 'kafkajs';
import type { BusEvent } from './port';
import { HEADER, consumerConfig, deadLetterMessage, defaultDeadLetterTopic, fromKafkaMessage, toKafkaMessage, topicsToCreate } from './kafka-codec';
import { asReceived } from './testing/fake-kafka';

const TRACEPARENT = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
const event: BusEvent = {
  id: 'evt-1',
  type: 'hold.close.v1',
  key: 'hold_42',
  data: { amount: '0.000123', note: 'ünïcødé ✓' },
  headers: { traceparent: TRACEPARENT, tracestate: 'vendor=1' },
};

describe('kafka message mapping', () => {
  it('keys the message by the event key and carries the whole event, trace context included, in the value', () => {
    const m = toKafkaMessage(event);
    expect(m.key).toBe('hold_42');
    expect(JSON.parse(m.value as string)).toEqual(event);
  });

  it('copies the event headers to the record headers, next to the event id and type', () => {
    expect(toKafkaMessage(event).headers).toEqual({
      traceparent: TRACEPARENT,
      tracestate: 'vendor=1',
      [HEADER.id]: 'evt-1',
      [HEADER.type]: 'hold.close.v1',
    });
  });

  it('lets no event header pass itself off as the adapter’s id or type header', () => {
    const spoof = { ...event, headers: { [HEADER.id]: 'other', [HEADER.type]: 'other.v1' } };
    expect(toKafkaMessage(spoof).headers).toMatchObject({ [HEADER.id]: 'evt-1', [HEADER.type]: 'hold.close.v1' });
  });

  it('maps an event without headers to a message with only the adapter’s headers', () => {
    const { headers: _, ...bare } = event;
    const m = toKafkaMessage(bare);
    expect(m.headers).toEqual({ [HEADER.id]: 'evt-1', [HEADER.type]: 'hold.close.v1' });
    expect(fromKafkaMessage(asReceived(m))).toEqual({ raw: m.value, event: bare });
  });

  it('reads back, from the bytes a consumer receives, exactly the event it wrote', () => {
    const m = toKafkaMessage(event);
    expect(fromKafkaMessage(asReceived(m))).toEqual({ raw: m.value, event });
  });

  it('reads the event from the value alone: record headers changed on the way do not change it', () => {
    const m = toKafkaMessage(event);
    const tampered = asReceived({ ...m, headers: { ...m.headers, traceparent: 'something else', [HEADER.id]: 'x' } });
    expect(fromKafkaMessage(tampered)).toEqual({ raw: m.value, event });
  });

  it.each([
    ['a null value (a tombstone)', null, ''],
    ['text that is not JSON', 'not json', 'not json'],
    ['JSON that is not an event', '{"id":"x"}', '{"id":"x"}'],
    [
      'an event with a non-string header',
      JSON.stringify({ ...event, headers: { traceparent: 1 } }),
      JSON.stringify({ ...event, headers: { traceparent: 1 } }),
    ],
  ])('refuses %s, keeping its text for the dead letter', (_, value, raw) => {
    const read = fromKafkaMessage(asReceived({ key: 'k', value }));
    expect(read).toEqual({ raw, error: expect.any(Error) });
  });
});

describe('kafka keys', () => {
  /** kafkajs's own default partitioner, the one the adapter's producer is configured with. */
  const partitionOf = (key: string, partitions = 12) => {
    const partitionMetadata: PartitionMetadata[] = Array.from({ length: partitions }, (_, partitionId) => ({
      partitionErrorCode: 0,
      partitionId,
      leader: 1,
      replicas: [1],
      isr: [1],
    }));
    return Partitioners.DefaultPartitioner()({ topic: 'billing.holds', partitionMetadata, message: toKafkaMessage({ ...event, key }) });
  };

  it('puts every event of one key on the same partition, whatever else differs', () => {
    const first = partitionOf('hold_42');
    for (let i = 0; i < 20; i++) expect(partitionOf('hold_42')).toBe(first);
  });

  it('spreads different keys over the partitions', () => {
    const used = new Set(Array.from({ length: 200 }, (_, i) => partitionOf(`hold_${i}`)));
    expect(used.size).toBe(12);
  });
});

describe('kafka dead letters', () => {
  it('goes to <topic>.dead-letter unless configured otherwise', () => {
    expect(defaultDeadLetterTopic('billing.holds')).toBe('billing.holds.dead-letter');
  });

  it('keeps the original text, the key, and why and where it failed', () => {
    const raw = toKafkaMessage(event).value as string;
    const m = deadLetterMessage({ topic: 'billing.holds', group: 'billing', raw, error: new Error('ledger down'), event });
    expect(m).toEqual({
      key: 'hold_42',
      value: raw,
      headers: { [HEADER.group]: 'billing', [HEADER.error]: 'ledger down', [HEADER.topic]: 'billing.holds' },
    });
  });

  it('is keyless when the message never decoded, and states non-Error failures as text', () => {
    const m = deadLetterMessage({ topic: 't', group: 'g', raw: 'not json', error: 'bad bytes' });
    expect(m.key).toBeNull();
    expect(m.value).toBe('not json');
    expect(m.headers).toMatchObject({ [HEADER.error]: 'bad bytes' });
  });
});

describe('kafka consumer settings', () => {
  it('leaves the session timeout to kafkajs when no claim delay is asked for', () => {
    expect(consumerConfig('billing', undefined)).toEqual({ groupId: 'billing' });
  });

  it('uses the claim delay as the session timeout, heartbeating at a third of it', () => {
    expect(consumerConfig('billing', 30_000)).toEqual({ groupId: 'billing', sessionTimeout: 30_000, heartbeatInterval: 10_000 });
  });

  it('raises a claim delay under the broker’s 6 s minimum to that minimum', () => {
    expect(consumerConfig('billing', 300)).toEqual({ groupId: 'billing', sessionTimeout: 6_000, heartbeatInterval: 2_000 });
  });
});

describe('kafka topic creation', () => {
  it('asks for 3 partitions and the broker’s default replication unless told otherwise', () => {
    expect(topicsToCreate(['a', 'b'], {})).toEqual([
      { topic: 'a', numPartitions: 3 },
      { topic: 'b', numPartitions: 3 },
    ]);
  });

  it('passes the partitions and replication factor it is given', () => {
    expect(topicsToCreate(['a'], { numPartitions: 12, replicationFactor: 3 })).toEqual([{ topic: 'a', numPartitions: 12, replicationFactor: 3 }]);
  });
});
