import { FailureCounts } from './kafka-consumer';

describe('FailureCounts', () => {
  it('says retry until the last allowed attempt, then dead-letter', () => {
    const f = new FailureCounts(3);
    expect(['t/0/7', 't/0/7', 't/0/7'].map((w) => f.failed(w))).toEqual(['retry', 'retry', 'dead-letter']);
  });

  it('dead-letters at the first failure when one attempt is allowed', () => {
    expect(new FailureCounts(1).failed('t/0/7')).toBe('dead-letter');
  });

  it('counts each message on its own', () => {
    const f = new FailureCounts(2);
    expect(f.failed('t/0/1')).toBe('retry');
    expect(f.failed('t/1/1')).toBe('retry');
    expect(f.failed('t/0/2')).toBe('retry');
    expect(f.failed('t/0/1')).toBe('dead-letter');
  });

  it('starts a message over after it succeeded, after it was dead-lettered, and after a rebalance', () => {
    const f = new FailureCounts(2);
    f.failed('a');
    f.succeeded('a');
    expect(f.failed('a')).toBe('retry');
    expect(f.failed('a')).toBe('dead-letter');
    expect(f.failed('a')).toBe('retry');
    f.clear();
    expect(f.failed('a')).toBe('retry');
  });
});
