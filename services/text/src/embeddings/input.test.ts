import { maxInputTokens } from '@gateway/pricing';
import { claimTokenWorker, countTokens } from '@gateway/upstreams';
import { validate } from '@gateway/service-kit';
import { countedInputTokens } from '../input-flow/input-tokens';
import { embeddingsBody, inputsOf, MAX_INPUTS } from './schema';

const parse = (body: unknown) => validate(embeddingsBody, { model: 'm', ...(body as object) });

describe('embeddings input', () => {
  // As a server holds it: the counting thread ends with the suite, not left to the jest worker's exit.
  afterAll(claimTokenWorker());
  it.each([
    ['a string', 'hello', ['hello']],
    ['a string array', ['a', 'b'], ['a', 'b']],
    ['a token array', [1, 2, 3], [[1, 2, 3]]],
    ['an array of token arrays', [[1], [2, 3]], [[1], [2, 3]]],
  ])('takes %s and lists it', (_name, input, listed) => {
    expect(inputsOf(parse({ input }).input)).toEqual(listed);
  });

  it.each([
    ['an empty string', ''],
    ['an empty array', []],
    ['an empty string in an array', ['a', '']],
    ['an empty token array', [[]]],
    ['a negative token id', [1, -2]],
    ['a fractional token id', [1.5]],
    ['mixed strings and tokens', ['a', 1]],
    ['too many inputs', Array.from({ length: MAX_INPUTS + 1 }, () => 'x')],
  ])('refuses %s with 400', (_name, input) => {
    expect(() => parse({ input })).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });

  it('refuses a bad encoding_format and a non-positive dimensions; defaults to float', () => {
    expect(() => parse({ input: 'x', encoding_format: 'binary' })).toThrow(/encoding_format/);
    expect(() => parse({ input: 'x', dimensions: 0 })).toThrow(/dimensions/);
    expect(parse({ input: 'x' }).encoding_format).toBe('float');
  });

  it('counts no more than the hold bounds (strings by bytes, token arrays by length)', async () => {
    const inputs = ['héllo wörld', 'the quick brown fox jumps over the lazy dog', '日本語のテキスト'];
    expect(maxInputTokens(inputs)).toBe(inputs.reduce((n, s) => n + Buffer.byteLength(s), 0));
    const each = await Promise.all(inputs.map(countTokens));
    expect(await countedInputTokens(inputs)).toBe(each.reduce((n, c) => n + c, 0));
    expect(await countedInputTokens(inputs)).toBeLessThanOrEqual(maxInputTokens(inputs));
    expect(maxInputTokens([[1, 2], [3]])).toBe(3);
    expect(await countedInputTokens([[1, 2], [3]])).toBe(3);
  });
});
