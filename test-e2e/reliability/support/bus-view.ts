import { Kafka, logLevel } from 'kafkajs';
import { kafkaGroupId } from '@gateway/bus/testing';
import { redisCommandAt, type FaultFleet } from './private-engines';

/**
 * What a fault test reads from a fleet's bus, on either adapter: the hold events billing's group has not acknowledged
 * (Redis: its pending entries; Kafka: its lag, the events past its committed offsets) and the dead letters of the
 * holds topic. Read from the bus itself, never from the services, so a test sees what a restarted billing will get.
 */
export interface BusView {
  unacknowledgedSettles(): Promise<number>;
  deadLetteredSettles(): Promise<number>;
  close(): Promise<void>;
}

export function busView(f: FaultFleet): BusView {
  if (!f.kafka) {
    const stream = `${f.busPrefix}billing.holds`;
    return {
      unacknowledgedSettles: async () => ((await redisCommandAt(f.redisUrl, 'XPENDING', stream, 'billing')) as [number])[0],
      deadLetteredSettles: async () => Number(await redisCommandAt(f.redisUrl, 'XLEN', `${f.busPrefix}dead:billing.holds`)),
      close: async () => undefined,
    };
  }
  const { prefix } = f.kafka;
  const admin = kafkaAdmin(f.kafka.brokers);
  const connected = admin.connect();
  const holds = `${prefix}billing.holds`;
  /** Events a topic holds: per partition, its end offset less its start (nothing is deleted in a test's minutes). */
  const size = async (topic: string) => (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
  return {
    async unacknowledgedSettles() {
      await connected;
      const ends = await admin.fetchTopicOffsets(holds);
      // The adapter names a Kafka group after the port's group and the topics it reads (libs/bus kafkaGroupId).
      const [committed] = await admin.fetchOffsets({ groupId: `${prefix}${kafkaGroupId('billing', ['billing.holds'])}`, topics: [holds] });
      return ends.reduce((n, p) => {
        const at = Number(committed.partitions.find((c) => c.partition === p.partition)?.offset ?? -1);
        // No commit yet: the group started at the tail when it first joined, so nothing it owes lies before low.
        return n + Number(p.high) - (at < 0 ? Number(p.low) : at);
      }, 0);
    },
    async deadLetteredSettles() {
      await connected;
      return size(`${holds}.dead-letter`);
    },
    close: async () => {
      await connected.catch(() => undefined);
      await admin.disconnect();
    },
  };
}

/**
 * The members of a Kafka fleet's consumer groups (those named with its prefix), by group, as the coordinator lists
 * them: a member id per consumer that has joined. Read with the test's own admin client, which it closes.
 */
export async function kafkaGroupMembers(f: FaultFleet): Promise<Record<string, string[]>> {
  if (!f.kafka) throw new Error('kafkaGroupMembers: this fleet runs on Redis Streams');
  return groupMembersOn(f.kafka.brokers, f.kafka.prefix);
}

/** The member ids of every consumer group on `brokers` (a comma-separated list) whose id starts with `prefix`, by the rest of its id. */
export async function groupMembersOn(brokers: string, prefix: string): Promise<Record<string, string[]>> {
  const admin = kafkaAdmin(brokers);
  await admin.connect();
  try {
    const ids = (await admin.listGroups()).groups
      .map((g) => g.groupId)
      .filter((id) => id.startsWith(prefix))
      .sort();
    const { groups } = await admin.describeGroups(ids);
    // In the order of `ids`, so two reads of the same groups compare equal whatever order the coordinator answers in.
    const memberIds = (id: string) => (groups.find((g) => g.groupId === id)?.members ?? []).map((m) => m.memberId).sort();
    return Object.fromEntries(ids.map((id) => [id.slice(prefix.length), memberIds(id)]));
  } finally {
    await admin.disconnect();
  }
}

/** The test's own admin client of a fleet's brokers (a comma-separated list), quiet: the fleet's logs tell the rest. */
const kafkaAdmin = (brokers: string) => new Kafka({ brokers: brokers.split(','), clientId: 'fault-test', logLevel: logLevel.NOTHING }).admin();
