import type { ProducerBatch, RecordMetadata } from 'kafkajs';
import { BatchingProducer, recordBytes } from './kafka-producer';

/** A sendBatch whose answers the test releases one at a time, so "one batch in flight" is observable. */
function gatedSender() {
  const batches: ProducerBatch[] = [];
  const gates: Array<(err?: Error) => void> = [];
  let arrived: (() => void) | undefined;
  return {
    batches,
    sendBatch(batch: ProducerBatch): Promise<RecordMetadata[]> {
      batches.push(batch);
      arrived?.();
      return new Promise((resolve, reject) => gates.push((err) => (err ? reject(err) : resolve([]))));
    },
    /** Resolves once `n` batches have reached sendBatch. */
    until(n: number): Promise<void> {
      return batches.length >= n ? Promise.resolve() : new Promise((r) => (arrived = () => batches.length >= n && r()));
    },
    answer(i: number, err?: Error) {
      gates[i](err);
    },
  };
}

const msg = (value: string) => ({ key: value.slice(0, 1), value });
const topicsOf = (b: ProducerBatch) => b.topicMessages?.map((t) => [t.topic, t.messages.map((m) => m.value)]);

describe('BatchingProducer', () => {
  it('sends the publishes of one event-loop turn as one batch, grouped by topic, each topic in publish order', async () => {
    const sender = gatedSender();
    const p = new BatchingProducer(sender, async () => undefined);
    const sent = [p.send('a', msg('a1')), p.send('b', msg('b1')), p.send('a', msg('a2')), p.send('a', msg('a3'))];
    await sender.until(1);
    sender.answer(0);
    await Promise.all(sent);
    expect(sender.batches).toHaveLength(1);
    expect(sender.batches[0].acks).toBe(-1);
    expect(topicsOf(sender.batches[0])).toEqual([
      ['a', ['a1', 'a2', 'a3']],
      ['b', ['b1']],
    ]);
  });

  it('keeps one batch in flight: what is published meanwhile goes in the next batch, after the first is answered', async () => {
    const sender = gatedSender();
    const p = new BatchingProducer(sender, async () => undefined);
    const first = p.send('t', msg('1'));
    await sender.until(1);
    const second = p.send('t', msg('2'));
    const third = p.send('t', msg('3'));
    // Whatever ran in the meantime, the second batch cannot start while the first is unanswered.
    await new Promise((r) => setImmediate(r));
    expect(sender.batches).toHaveLength(1);
    sender.answer(0);
    await first;
    await sender.until(2);
    expect(topicsOf(sender.batches[1])).toEqual([['t', ['2', '3']]]);
    sender.answer(1);
    await Promise.all([second, third]);
  });

  it('fails only the sends of a failed batch; the next batch still goes out', async () => {
    const sender = gatedSender();
    const p = new BatchingProducer(sender, async () => undefined);
    const doomed = [p.send('t', msg('1')), p.send('t', msg('2'))];
    await sender.until(1);
    const later = p.send('t', msg('3'));
    sender.answer(0, new Error('broker said no'));
    for (const d of doomed) await expect(d).rejects.toThrow('broker said no');
    await sender.until(2);
    sender.answer(1);
    await expect(later).resolves.toBeUndefined();
  });

  it('connects before each batch, and fails the batch without sending when connecting fails', async () => {
    const sender = gatedSender();
    let attempts = 0;
    const p = new BatchingProducer(sender, async () => {
      if (++attempts === 1) throw new Error('no brokers');
    });
    await expect(p.send('t', msg('1'))).rejects.toThrow('no brokers');
    expect(sender.batches).toHaveLength(0);
    const retried = p.send('t', msg('2'));
    await sender.until(1);
    sender.answer(0);
    await retried;
    expect(attempts).toBe(2);
  });

  it('flush() resolves once everything queued so far has been answered', async () => {
    const sender = gatedSender();
    const p = new BatchingProducer(sender, async () => undefined);
    const sent = p.send('t', msg('1'));
    let flushed = false;
    const flushing = p.flush().then(() => (flushed = true));
    await sender.until(1);
    expect(flushed).toBe(false);
    sender.answer(0);
    await flushing;
    await expect(sent).resolves.toBeUndefined();
  });

  it('splits what piled up into batches of at most maxMessages records, in publish order', async () => {
    const sender = gatedSender();
    const p = new BatchingProducer(sender, async () => undefined, { maxMessages: 2 });
    const sent = ['1', '2', '3', '4', '5'].map((v) => p.send('t', msg(v)));
    for (let i = 0; i < 3; i++) {
      await sender.until(i + 1);
      sender.answer(i);
    }
    await Promise.all(sent);
    expect(sender.batches.map(topicsOf)).toEqual([[['t', ['1', '2']]], [['t', ['3', '4']]], [['t', ['5']]]]);
  });

  it('splits by bytes (keys, values and headers), and sends a record larger than the bound alone', async () => {
    const sender = gatedSender();
    const small = (v: string) => ({ key: 'k', value: v.padEnd(100, '.'), headers: { 'bus-id': v } });
    const bytes = recordBytes(small('a'));
    expect(bytes).toBe(16 + 1 + 100 + 'bus-id'.length + 1);
    const p = new BatchingProducer(sender, async () => undefined, { maxBytes: 2 * bytes });
    const sent = [p.send('t', small('a')), p.send('t', small('b')), p.send('t', small('c')), p.send('t', { key: 'k', value: 'x'.repeat(1_000) })];
    for (let i = 0; i < 3; i++) {
      await sender.until(i + 1);
      sender.answer(i);
    }
    await Promise.all(sent);
    expect(sender.batches.map((b) => b.topicMessages?.[0].messages.length)).toEqual([2, 1, 1]);
  });
});
