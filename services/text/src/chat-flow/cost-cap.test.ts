import { buildRegistry, parseConfig } from '@gateway/config';
import { parseUsd } from '@gateway/money';
import { claimTokenWorker } from '@gateway/upstreams';
import { OutputGuard, endAtLimit, textCapOf } from './cost-cap';

const model = buildRegistry(
  parseConfig({
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [
      {
        id: 'a/text',
        name: 'text',
        category: 'text',
        status: 'available',
        context_length: 8192,
        max_output_tokens: 100,
        pricing: { prompt: '0.001', completion: '0.002' },
        endpoints: [{ provider: 'sim', model: 'x' }],
      },
    ],
  }),
).get('a/text')!;
const ping = { messages: [{ role: 'user', content: 'ping' }] };

describe('a text call under max_cost', () => {
  afterAll(claimTokenWorker());

  it('reckons the prompt as its tokens and framing: "ping" is 1 + 8, so 0.03 affords (0.03 - 0.009) / 0.002 = 10 tokens', async () => {
    const cap = (await textCapOf([ping], parseUsd('0.03')))!;
    expect(cap.outputLimit(model)).toBe(10);
    expect(cap.least(model)).toBe(parseUsd('0.011'));
    expect(cap.streamGuard(model, ping)?.limit).toBe(10);
    // Two choices share what is left: 0.021 / 0.004 = 5 each, and the stream's guard counts both.
    const two = (await textCapOf([{ ...ping, n: 2 }], parseUsd('0.03')))!;
    expect(two.outputLimit(model)).toBe(5);
    expect(two.streamGuard(model, { ...ping, n: 2 })?.limit).toBe(10);
  });

  it('guards no stream when the cap is not what limits it, and reckons nothing without a cap', async () => {
    const loose = (await textCapOf([ping], parseUsd('1')))!;
    expect(loose.outputLimit(model)).toBe(495);
    expect(loose.streamGuard(model, ping)).toBeUndefined();
    // The client's own limit, tighter than the cap's, is what bounds the stream.
    expect((await textCapOf([ping], parseUsd('0.03')))!.streamGuard(model, { ...ping, max_tokens: 5 })).toBeUndefined();
    expect(await textCapOf([ping], undefined)).toBeUndefined();
  });

  it('the guard admits pieces up to its limit in tokens, counting nothing while the bytes alone fit', async () => {
    const guard = new OutputGuard(3);
    let delivered = '';
    const admitted: string[] = [];
    for (const piece of ['hel', 'lo', ' hello', ' hello', ' hello']) {
      if (!(await guard.admits(delivered, piece))) break;
      delivered += piece;
      admitted.push(piece);
    }
    // "hello hello hello" is 3 tokens; the fourth " hello" would be 4.
    expect(delivered).toBe('hello hello hello');
    expect(admitted).toHaveLength(4);
  });

  it('ends every choice with finish_reason length, without the usage of the chunk it copies', () => {
    const chunk = { id: 'c', object: 'chat.completion.chunk' as const, created: 1, model: 'x', choices: [], usage: null };
    expect(endAtLimit(chunk, 2)).toEqual({
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'x',
      choices: [
        { index: 0, delta: {}, finish_reason: 'length' },
        { index: 1, delta: {}, finish_reason: 'length' },
      ],
    });
  });
});
