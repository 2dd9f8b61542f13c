import type { ConsumerConfig, ITopicConfig, KafkaMessage, Message } from 'kafkajs';
import type { BusEvent } from './port';
import { decodeEvent, encodeEvent } from './codec';
import { errorMessage } from './errors';

/** Record headers the adapter writes, so tools that read headers only (broker UIs, kcat) see what a message is. */
export const HEADER = {
  id: 'bus-id',
  type: 'bus-type',
  group: 'bus-group',
  error: 'bus-error',
  topic: 'bus-topic',
} as const;

/**
 * The key is the partition key, so one key's events share a partition and its order. The value is the whole
 * encoded event, headers (trace context) included: it alone is read back, so a record header added or dropped
 * on the way by other tooling cannot change the event. The record headers are copies for that tooling, and the
 * adapter's own names win over an event header of the same name.
 */
export function toKafkaMessage(event: BusEvent): Message {
  return {
    key: event.key,
    value: encodeEvent(event),
    headers: { ...event.headers, [HEADER.id]: event.id, [HEADER.type]: event.type },
  };
}

export type ReadMessage = { raw: string; event: BusEvent } | { raw: string; error: unknown };

/** Never throws: a message that is not an event still has its text, which the dead letter keeps. */
export function fromKafkaMessage(message: Pick<KafkaMessage, 'value'>): ReadMessage {
  const raw = message.value?.toString('utf8') ?? '';
  try {
    return { raw, event: decodeEvent(raw) };
  } catch (error) {
    return { raw, error };
  }
}

export interface DeadLetter {
  topic: string;
  group: string;
  /** The original text, so a message that failed to decode can still be inspected. */
  raw: string;
  error: unknown;
  /** Absent when the message did not decode; the dead letter is then keyless. */
  event?: BusEvent;
}

export const defaultDeadLetterTopic = (topic: string) => `${topic}.dead-letter`;

export function deadLetterMessage(d: DeadLetter): Message {
  return {
    key: d.event?.key ?? null,
    value: d.raw,
    headers: { [HEADER.group]: d.group, [HEADER.error]: errorMessage(d.error), [HEADER.topic]: d.topic },
  };
}

/** Kafka's broker refuses a session timeout under its minimum, 6 s by default. */
const MIN_SESSION_TIMEOUT_MS = 6_000;

/**
 * Kafka's "dead consumer" detection is the session timeout, so the port's claim delay becomes that, raised to the
 * broker's minimum. Heartbeats at a third of it, as Kafka recommends.
 */
export function consumerConfig(group: string, claimIdleMs: number | undefined): ConsumerConfig {
  if (claimIdleMs === undefined) return { groupId: group };
  const sessionTimeout = Math.max(MIN_SESSION_TIMEOUT_MS, claimIdleMs);
  return { groupId: group, sessionTimeout, heartbeatInterval: Math.floor(sessionTimeout / 3) };
}

export interface CreateTopics {
  numPartitions?: number;
  replicationFactor?: number;
}

/** Without a replication factor the broker's default applies, which is what a single-broker test cluster needs. */
export function topicsToCreate(topics: string[], opts: CreateTopics): ITopicConfig[] {
  const { numPartitions = 3, replicationFactor } = opts;
  return topics.map((topic) => ({ topic, numPartitions, ...(replicationFactor ? { replicationFactor } : {}) }));
}
