import type { BusEvent, EventBus, Handler } from './port';
import { withNamePrefix } from './name-prefix';
import { provisionedTopicNames } from './topic-provision';

/** A bus that records what the wrapper asks of it and hands its handler back, so a delivery can be simulated. */
function recordingBus() {
  const calls: { publish: [string, string][]; subscribe: { group: string; topics: string[]; handler: Handler }[] } = { publish: [], subscribe: [] };
  const bus: EventBus = {
    kind: 'kafka',
    publish: async (topic, event) => void calls.publish.push([topic, event.id]),
    subscribe: async (group, topics, handler) => {
      calls.subscribe.push({ group, topics, handler });
      return { close: async () => undefined };
    },
    ping: async () => undefined,
    close: async () => undefined,
  };
  return { bus, calls };
}

const event: BusEvent = { id: 'e1', type: 't.v1', key: 'k', data: null };

describe('withNamePrefix', () => {
  it('publishes to, and subscribes the group to, the prefixed names; the handler sees the names the code uses', async () => {
    const { bus, calls } = recordingBus();
    const prefixed = withNamePrefix(bus, 'acme.');
    await prefixed.publish('billing.holds', event);
    const seen: string[] = [];
    await prefixed.subscribe('billing', ['billing.holds', 'billing.usage'], async (_e, topic) => void seen.push(topic));
    expect(calls.publish).toEqual([['acme.billing.holds', 'e1']]);
    expect(calls.subscribe.map((s) => [s.group, s.topics])).toEqual([['acme.billing', ['acme.billing.holds', 'acme.billing.usage']]]);
    await calls.subscribe[0].handler(event, 'acme.billing.usage');
    expect(seen).toEqual(['billing.usage']);
  });

  it('is the bus itself without a prefix, and refuses a prefix Kafka cannot name a topic with', () => {
    const { bus } = recordingBus();
    expect(withNamePrefix(bus, '')).toBe(bus);
    expect(() => withNamePrefix(bus, 'bus:gw:')).toThrow(/letters, digits and \. _ -/);
  });
});

describe('provisionedTopicNames', () => {
  it('names every topic and a dead letter beside each consumed one, under the prefix, once each', () => {
    expect(provisionedTopicNames({ topics: ['a', 'b', 'a'], consumed: ['a'], prefix: 'p.' })).toEqual(['p.a', 'p.b', 'p.a.dead-letter']);
  });
});
