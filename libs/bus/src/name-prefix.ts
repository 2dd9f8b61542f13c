import type { EventBus } from './port';

/** What Kafka accepts in a topic or group name that the prefix adds to (a topic allows no more). */
const PREFIX = /^[A-Za-z0-9._-]*$/;

/**
 * Puts one installation's topics and consumer groups under a prefix (KAFKA_TOPIC_PREFIX), so two gateways, or two
 * test fleets, can share a cluster without one's billing group taking the other's settles. Handlers see the names
 * the code uses; a dead letter lands beside its prefixed topic, since the adapter names it from the topic it read.
 */
export function withNamePrefix(bus: EventBus, prefix: string): EventBus {
  if (!PREFIX.test(prefix)) throw new Error(`bus: topic prefix "${prefix}" may hold letters, digits and . _ - only`);
  if (!prefix) return bus;
  const unprefixed = (topic: string) => (topic.startsWith(prefix) ? topic.slice(prefix.length) : topic);
  return {
    kind: bus.kind,
    ping: () => bus.ping(),
    close: () => bus.close(),
    publish: (topic, event) => bus.publish(prefix + topic, event),
    subscribe: (group, topics, handler, opts) =>
      bus.subscribe(
        prefix + group,
        topics.map((t) => prefix + t),
        (event, topic) => handler(event, unprefixed(topic)),
        opts,
      ),
  };
}
