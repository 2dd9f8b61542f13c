import { pollDelay } from './drive';

describe('poll delay', () => {
  it('grows 1.5× per poll from the configured interval, within ±10% jitter', () => {
    expect(pollDelay(1000, 0, () => 0.5)).toBe(1000);
    expect(pollDelay(1000, 2, () => 0.5)).toBe(2250);
    expect(pollDelay(1000, 0, () => 0)).toBe(900);
    expect(pollDelay(1000, 0, () => 0.999999)).toBe(1100);
  });

  it('never waits more than 15 seconds (plus jitter), however many polls', () => {
    expect(pollDelay(1000, 1_000, () => 0.5)).toBe(15_000);
  });
});
