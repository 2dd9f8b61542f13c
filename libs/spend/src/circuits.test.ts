import { Circuits } from './circuits';

describe('Circuits', () => {
  it('opens after the threshold of consecutive failures, then lets one trial through after the cool-down', () => {
    let now = 0;
    const c = new Circuits(3, 1000, () => now);
    for (let i = 0; i < 2; i++) c.failure('a');
    expect(c.allow('a')).toBe(true);
    c.failure('a');
    expect(c.allow('a')).toBe(false);
    expect(c.isAvailable('a')).toBe(false);
    now = 1000;
    expect(c.isAvailable('a')).toBe(true);
    expect(c.allow('a')).toBe(true); // the trial
    expect(c.allow('a')).toBe(false); // only one at a time
    c.failure('a'); // trial failed: open again
    expect(c.snapshot()[0].state).toBe('open');
    now = 2000;
    expect(c.allow('a')).toBe(true);
    c.success('a');
    expect(c.allow('a')).toBe(true);
    expect(c.snapshot()).toEqual([]);
  });

  it('hands back a half-open trial that was abandoned, without counting it either way', () => {
    let now = 0;
    const c = new Circuits(1, 1000, () => now);
    c.failure('a');
    now = 1000;
    expect(c.allow('a')).toBe(true);
    expect(c.allow('a')).toBe(false);
    c.abandon('a');
    expect(c.allow('a')).toBe(true);
    expect(c.snapshot()[0].consecutiveFailures).toBe(1);
  });

  it('a success resets the count', () => {
    const c = new Circuits(2, 1000, () => 0);
    c.failure('a');
    c.success('a');
    c.failure('a');
    expect(c.allow('a')).toBe(true);
  });
});
