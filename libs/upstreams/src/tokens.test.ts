import { TOKEN_WORKER_IDLE_MS, claimTokenWorker, countTokens, countTokensOfAll, stopTokenWorker, tokenWorkerRunning, warmTokenizer } from './tokens';

// The serving thread must never load the encoder (its tables are ~80 MiB of heap, see countTokens): this factory
// runs only if something in this thread requires js-tiktoken. The expected counts come from the real module.
let mockEncoderLoadedHere = false;
jest.mock('js-tiktoken', () => {
  mockEncoderLoadedHere = true;
  return jest.requireActual('js-tiktoken');
});

const o200k = () => (jest.requireActual('js-tiktoken') as typeof import('js-tiktoken')).getEncoding('o200k_base');

describe('token counts', () => {
  afterAll(stopTokenWorker);

  // The worker loads its own encoder first: seconds on a busy 2-core machine, beyond jest's 5 s default.
  it('counts small, non-ASCII and large texts as o200k_base does, in the worker thread only', async () => {
    const large = 'The quick brown fox jumps over the lazy dog. Ünïcödé 日本語 '.repeat(2_000);
    const texts = ['hello world', 'Ünïcödé 日本語 🙂', large, `${large}!`];
    const counts = await Promise.all(texts.map(countTokens));
    expect(mockEncoderLoadedHere).toBe(false);
    const encoder = o200k();
    expect(counts).toEqual(texts.map((t) => encoder.encode(t).length));
    expect(counts[0]).toBe(2);
  }, 30_000);

  it('sums the counts of several texts, each counted alone', async () => {
    expect(await countTokensOfAll(['hello world', 'Ünïcödé 日本語 🙂', 'hello world'])).toBe(4 + o200k().encode('Ünïcödé 日本語 🙂').length);
    expect(await countTokensOfAll([])).toBe(0);
  }, 30_000);

  it('counts an empty text as 0 without a round trip', async () => {
    await stopTokenWorker();
    expect(await countTokens('')).toBe(0);
  });

  it('starts a new worker after the last one ended, and fails the counts it held instead of hanging', async () => {
    const pending = countTokens('a text the worker never answers');
    await stopTokenWorker();
    await expect(pending).rejects.toThrow(/token counting worker exited/);
    expect(await countTokens('hello world')).toBe(2);
  }, 30_000);

  // Each count below goes to a fresh worker, still loading its encoder when the claim is released: a warm one may
  // answer before it is ended.
  it('ends the worker when the last server holding it closes, failing the counts it still held', async () => {
    const first = claimTokenWorker();
    const second = claimTokenWorker();
    await stopTokenWorker();
    const held = 'counted across the first server closing';
    const counting = countTokens(held);
    await first();
    // A second release of the same claim must not give up the other server's.
    await first();
    expect(await counting).toBe(o200k().encode(held).length);
    await stopTokenWorker();
    const cut = countTokens('a text the worker never answers');
    await second();
    await expect(cut).rejects.toThrow(/token counting worker exited/);
  }, 30_000);

  // Fake timers stand in for the idle wait only; the counts are real round trips to the worker thread.
  describe('the idle end', () => {
    beforeEach(async () => {
      await stopTokenWorker();
      jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    });
    afterEach(async () => {
      jest.useRealTimers();
      await stopTokenWorker();
    });

    it('ends a worker that has counted nothing for the idle time, and a later count starts a new one', async () => {
      expect(await countTokens('hello world')).toBe(2);
      jest.advanceTimersByTime(TOKEN_WORKER_IDLE_MS - 1);
      expect(tokenWorkerRunning()).toBe(true);
      jest.advanceTimersByTime(1);
      expect(tokenWorkerRunning()).toBe(false);
      expect(await countTokens('hello world')).toBe(2);
      expect(tokenWorkerRunning()).toBe(true);
    }, 30_000);

    it('answers a count that arrives while the ended worker is still exiting, from a new one', async () => {
      expect(await countTokens('hello world')).toBe(2);
      jest.advanceTimersByTime(TOKEN_WORKER_IDLE_MS);
      // The terminate has been asked for, not yet done: this count must not go to the exiting thread.
      const counting = countTokens('Ünïcödé 日本語 🙂');
      expect(await counting).toBe(o200k().encode('Ünïcödé 日本語 🙂').length);
    }, 30_000);

    it('restarts the idle time at each count, and never ends a worker while a count is pending', async () => {
      expect(await countTokens('hello world')).toBe(2);
      jest.advanceTimersByTime(TOKEN_WORKER_IDLE_MS - 1);
      const large = 'The quick brown fox jumps over the lazy dog. '.repeat(5_000);
      const counting = countTokens(large);
      jest.advanceTimersByTime(TOKEN_WORKER_IDLE_MS * 2);
      expect(tokenWorkerRunning()).toBe(true);
      expect(await counting).toBe(o200k().encode(large).length);
      jest.advanceTimersByTime(TOKEN_WORKER_IDLE_MS - 1);
      expect(tokenWorkerRunning()).toBe(true);
      jest.advanceTimersByTime(1);
      expect(tokenWorkerRunning()).toBe(false);
    }, 30_000);

    it('ends a worker warmed for a stream that then counted nothing; warming one near its end restarts its idle time', async () => {
      warmTokenizer();
      expect(tokenWorkerRunning()).toBe(true);
      jest.advanceTimersByTime(TOKEN_WORKER_IDLE_MS - 1);
      warmTokenizer();
      jest.advanceTimersByTime(TOKEN_WORKER_IDLE_MS - 1);
      expect(tokenWorkerRunning()).toBe(true);
      jest.advanceTimersByTime(1);
      expect(tokenWorkerRunning()).toBe(false);
    });

    it('a claim released after the idle end has no thread left to end, and the next claim counts again', async () => {
      const release = claimTokenWorker();
      expect(await countTokens('hello world')).toBe(2);
      jest.advanceTimersByTime(TOKEN_WORKER_IDLE_MS);
      await release();
      expect(tokenWorkerRunning()).toBe(false);
      const again = claimTokenWorker();
      expect(await countTokens('hello world')).toBe(2);
      await again();
      expect(tokenWorkerRunning()).toBe(false);
    }, 30_000);
  });
});
