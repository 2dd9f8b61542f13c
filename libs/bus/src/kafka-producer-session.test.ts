import { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError, type ProducerBatch } from 'kafkajs';
import type { KafkaProducer } from './kafka-client';
import { ProducerSession, lostSession } from './kafka-producer-session';

/** kafkajs's own errors, as its producer throws them: a broker's code, or that code after the retries ran out. */
const protocolError = (type: string, code: number, retriable = false) =>
  // kafkajs builds these from its table of broker codes, an object its types call an Error.
  new KafkaJSProtocolError({ type, code, retriable, message: `broker error ${type}` } as unknown as Error);
const outOfOrder = () => protocolError('OUT_OF_ORDER_SEQUENCE_NUMBER', 45);
const afterRetries = (cause: Error) => new KafkaJSNumberOfRetriesExceeded(cause, { retryCount: 5, retryTime: 1000 });

interface FakeProducer extends KafkaProducer {
  id: number;
  sent: ProducerBatch[];
  connected: boolean;
  /** The errors its next sends throw, in turn. */
  failures: Error[];
}

/**
 * Producers as kafkajs makes them, each its own session; what each sent and whether it is connected. `refusing`:
 * the errors the n-th producer made throws on its first sends.
 */
function producers(refusing: Record<number, Error[]> = {}) {
  const made: FakeProducer[] = [];
  const make = (): KafkaProducer => {
    const p: FakeProducer = {
      id: made.length,
      sent: [],
      connected: false,
      failures: [...(refusing[made.length] ?? [])],
      connect: async () => void (p.connected = true),
      disconnect: async () => void (p.connected = false),
      sendBatch: async (batch) => {
        const failure = p.failures.shift();
        if (failure) throw failure;
        p.sent.push(batch);
        return [];
      },
    };
    made.push(p);
    return p;
  };
  return { made, make };
}

const batch = (value: string): ProducerBatch => ({ acks: -1, topicMessages: [{ topic: 't', messages: [{ key: 'k', value }] }] });

describe('ProducerSession', () => {
  it('sends on one producer, connected once, while its sends succeed', async () => {
    const { made, make } = producers();
    const session = new ProducerSession(make);
    await session.sendBatch(batch('a'));
    await session.sendBatch(batch('b'));
    expect(made).toHaveLength(1);
    expect(made[0].sent).toEqual([batch('a'), batch('b')]);
  });

  it('sends a batch the broker refused as out of order again at once, on a new session, and drops the old one', async () => {
    const { made, make } = producers();
    const renewed: unknown[] = [];
    const session = new ProducerSession(make, (err) => renewed.push(err));
    await session.sendBatch(batch('a'));
    made[0].failures.push(outOfOrder());
    await session.sendBatch(batch('b'));
    expect(made).toHaveLength(2);
    expect(made[0]).toMatchObject({ sent: [batch('a')], connected: false });
    expect(made[1]).toMatchObject({ sent: [batch('b')], connected: true });
    expect(renewed).toEqual([expect.objectContaining({ type: 'OUT_OF_ORDER_SEQUENCE_NUMBER' })]);
  });

  it('gives any other failure back to the caller, and sends the next batch on a new session', async () => {
    const { made, make } = producers();
    const session = new ProducerSession(make);
    await session.sendBatch(batch('a'));
    const down = afterRetries(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED'));
    made[0].failures.push(down);
    await expect(session.sendBatch(batch('b'))).rejects.toBe(down);
    expect(made).toHaveLength(2);
    expect(made[0].connected).toBe(false);
    await session.sendBatch(batch('b'));
    expect(made[1].sent).toEqual([batch('b')]);
  });

  it('gives the failure back when the new session refuses the batch too, and renews again', async () => {
    const { made, make } = producers({ 0: [outOfOrder()], 1: [outOfOrder()] });
    const session = new ProducerSession(make);
    await expect(session.sendBatch(batch('a'))).rejects.toMatchObject({ type: 'OUT_OF_ORDER_SEQUENCE_NUMBER' });
    expect(made).toHaveLength(3);
    await session.sendBatch(batch('a'));
    expect(made.map((p) => p.sent)).toEqual([[], [], [batch('a')]]);
  });

  it('keeps its session when only the connection could not be made', async () => {
    const { made, make } = producers();
    const session = new ProducerSession(make);
    made[0].connect = async () => {
      throw new KafkaJSConnectionError('Connection error: connect ECONNREFUSED');
    };
    await expect(session.sendBatch(batch('a'))).rejects.toThrow('ECONNREFUSED');
    expect(made).toHaveLength(1);
    made[0].connect = async () => void (made[0].connected = true);
    await session.sendBatch(batch('a'));
    expect(made[0].sent).toEqual([batch('a')]);
  });

  it('disconnects its producer only if it connected one', async () => {
    const { made, make } = producers();
    const session = new ProducerSession(make);
    const disconnect = jest.spyOn(made[0], 'disconnect');
    await session.disconnect();
    expect(disconnect).not.toHaveBeenCalled();
    await session.sendBatch(batch('a'));
    await session.disconnect();
    expect(made[0].connected).toBe(false);
  });
});

describe('lostSession', () => {
  it.each([
    ['out of order', outOfOrder()],
    ['out of order after the retries ran out', afterRetries(outOfOrder())],
    ['an unknown producer id', protocolError('UNKNOWN_PRODUCER_ID', 59)],
    ['a fenced epoch', protocolError('INVALID_PRODUCER_EPOCH', 47)],
  ])('is true for %s', (_, err) => expect(lostSession(err)).toBe(true));

  it.each([
    ['a connection error', new KafkaJSConnectionError('refused')],
    ['a retriable protocol error', protocolError('NOT_LEADER_FOR_PARTITION', 6, true)],
    ['a plain error', new Error('OUT_OF_ORDER_SEQUENCE_NUMBER')],
    ['nothing', undefined],
  ])('is false for %s', (_, err) => expect(lostSession(err)).toBe(false));
});
