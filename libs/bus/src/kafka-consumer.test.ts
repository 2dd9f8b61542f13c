import { FailureCounts, whereOf } from './kafka-consumer';

describe('FailureCounts', () => {
  it('counts the failures of each message on its own, with the last error', () => {
    const f = new FailureCounts();
    expect(f.failed(whereOf('t', 0, '1'), 'a')).toBe(1);
    expect(f.failed(whereOf('t', 1, '1'), 'b')).toBe(1);
    expect(f.failed(whereOf('t', 0, '1'), 'c')).toBe(2);
    expect(f.of(whereOf('t', 0, '1'))).toEqual({ failures: 2, lastError: 'c' });
    expect(f.of(whereOf('t', 0, '2'))).toBeUndefined();
  });

  it('starts a message over once forgotten (handled, or dead-lettered)', () => {
    const f = new FailureCounts();
    f.failed('t/0/1', 'x');
    f.forget('t/0/1');
    expect(f.failed('t/0/1', 'x')).toBe(1);
  });

  it('keeps the counts of the partitions a rejoin left to this member, and only those', () => {
    const f = new FailureCounts();
    f.failed(whereOf('billing.holds', 0, '7'), 'x');
    f.failed(whereOf('billing.holds', 1, '9'), 'x');
    f.failed(whereOf('gw.a-b.c', 2, '3'), 'x');
    f.keepAssigned({ 'billing.holds': [0, 2], 'gw.a-b.c': [2] });
    expect(f.of(whereOf('billing.holds', 0, '7'))?.failures).toBe(1);
    expect(f.of(whereOf('billing.holds', 1, '9'))).toBeUndefined();
    expect(f.of(whereOf('gw.a-b.c', 2, '3'))?.failures).toBe(1);
    expect(f.failed(whereOf('billing.holds', 0, '7'), 'x')).toBe(2);
  });
});
