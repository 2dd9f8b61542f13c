import { countTokens, countTokensAsync, OFF_THREAD_CHARS, stopTokenWorker } from './tokens';

describe('token counts', () => {
  afterAll(stopTokenWorker);

  it('counts a large text in the worker thread exactly as on the event loop', async () => {
    const large = 'The quick brown fox jumps over the lazy dog. Ünïcödé 日本語 '.repeat(Math.ceil((OFF_THREAD_CHARS * 2) / 60));
    expect(large.length).toBeGreaterThan(OFF_THREAD_CHARS);
    const [a, b] = await Promise.all([countTokensAsync(large), countTokensAsync(`${large}!`)]);
    expect(a).toBe(countTokens(large));
    expect(b).toBe(countTokens(`${large}!`));
    // The worker loads its own encoder first: seconds on a busy 2-core machine, beyond jest's 5 s default.
  }, 30_000);

  it('counts a small text in place', async () => {
    expect(await countTokensAsync('hello world')).toBe(countTokens('hello world'));
    expect(await countTokensAsync('')).toBe(0);
  });
});
