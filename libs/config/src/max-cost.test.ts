import { maxCostSchema } from './index';

describe('maxCostSchema', () => {
  it.each([
    [0.05, 50_000_000n],
    ['0.05', 50_000_000n],
    // A JSON number is read by its shortest decimal form: 0.1 + 0.2 would not be 0.3, but 0.3 is 0.3.
    [0.3, 300_000_000n],
    [1e-9, 1n],
    ['12', 12_000_000_000n],
    [' 0.000000001 ', 1n],
  ])('reads %j as exactly %s nano-USD', (value, nano) => {
    expect(maxCostSchema.parse(value)).toBe(nano);
  });

  it.each([
    ['zero', 0, 'must be above 0'],
    ['a negative number', -1, 'must be above 0'],
    ['a negative string', '-0.5', 'must be a positive USD amount'],
    ['NaN', Number.NaN, 'must be a positive USD amount'],
    ['Infinity', Number.POSITIVE_INFINITY, 'must be a positive USD amount'],
    ['words', 'ten cents', 'must be a positive USD amount'],
    ['a string in exponent notation', '1e-3', 'must be a positive USD amount'],
    ['an amount finer than a nano-USD', 0.0000000001, 'at most 9 decimals'],
    ['a string finer than a nano-USD', '0.0000000015', 'at most 9 decimals'],
    ['an absurd amount', 1e12, 'at most 1000000 USD'],
    ['an exponent past any amount', 1e300, 'at most 1000000 USD'],
    ['a string past the ceiling', '1000000.000000001', 'at most 1000000 USD'],
    ['a boolean', true, 'must be a positive USD amount'],
    ['an object', { usd: 1 }, 'must be a positive USD amount'],
  ])('refuses %s', (_name, value, message) => {
    const r = maxCostSchema.safeParse(value);
    expect(r.success).toBe(false);
    expect(r.error?.issues[0].message).toContain(message);
  });
});
