import { endableWait } from './timing';

describe('endableWait: a consumer’s linger after a thin read', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  const state = (p: Promise<void>) => {
    let ended = false;
    void p.then(() => (ended = true));
    return () => ended;
  };

  it('ends when its time is up, and tells its owner once', async () => {
    const onEnd = jest.fn();
    const wait = endableWait(20, onEnd);
    const ended = state(wait.done);
    await jest.advanceTimersByTimeAsync(19);
    expect(ended()).toBe(false);
    expect(onEnd).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1);
    expect(ended()).toBe(true);
    wait.end();
    expect(onEnd).toHaveBeenCalledTimes(1);
  });

  it('ends at once when ended (a stopping consumer), and its timer no longer fires', async () => {
    const onEnd = jest.fn();
    const wait = endableWait(20, onEnd);
    const ended = state(wait.done);
    wait.end();
    await Promise.resolve();
    expect(ended()).toBe(true);
    expect(onEnd).toHaveBeenCalledTimes(1);
    expect(jest.getTimerCount()).toBe(0);
  });
});
