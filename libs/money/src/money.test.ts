import fc from 'fast-check';
import { charge, formatRate, formatUsd, mostUnits, parseRate, parseUsd, toCents2 } from './index';

describe('money', () => {
  it('reads USD amounts exactly, never through binary floating point', () => {
    expect(parseUsd(0.1) + parseUsd(0.2)).toBe(parseUsd('0.3'));
    expect(parseUsd(2.5)).toBe(2_500_000_000n);
    expect(parseUsd('-1.25')).toBe(-1_250_000_000n);
    expect(parseUsd(1e-9)).toBe(1n);
  });

  it('refuses amounts finer than a nano-dollar and non-numbers', () => {
    expect(() => parseUsd('0.0000000001')).toThrow(RangeError);
    expect(() => parseUsd('abc')).toThrow(RangeError);
    expect(() => parseUsd(Number.NaN)).toThrow(RangeError);
  });

  it('reads exponent notation digit for digit, the same for numbers and strings, and refuses what is finer than a nano-dollar', () => {
    // Once 1e-10 read as 0 and 1.5e-9 as 2 nano (toFixed rounded them).
    for (const v of [1e-10, '1e-10', 1.5e-9, '1.5e-9', 1.5e-10, '-2.5e-10', '1e-31', '1e31']) expect(() => parseUsd(v)).toThrow(RangeError);
    expect(parseUsd(1.5e-7)).toBe(150n);
    expect(parseUsd('1.5E-7')).toBe(150n);
    expect(parseUsd(2e-9)).toBe(2n);
    expect(parseUsd('-3e-9')).toBe(-3n);
    expect(parseUsd(1e21)).toBe(10n ** 30n);
    expect(parseUsd('1.25e2')).toBe(125_000_000_000n);
    expect(parseUsd('12.5e-1')).toBe(1_250_000_000n);
  });

  it('sums a charge in atto and rounds once at the end', () => {
    // 3 × 0.001 + 1 × 0.002 = 0.005 exactly
    expect(
      formatUsd(
        charge([
          [3, parseRate('0.001')],
          [1, parseRate('0.002')],
        ]),
      ),
    ).toBe('0.005');
    // 1 token at 0.0000000004 rounds to 0 nano, but 3 of them (1.2 nano) round to 1, not 0+0+0
    expect(charge([[3, parseRate('0.0000000004')]])).toBe(1n);
    expect(charge([[1, parseRate('0.0000000005')]])).toBe(1n); // half up
  });

  it('prices a quantity in a finer unit than its rate exactly, still rounding once', () => {
    // 1500 ms at 0.0000000013 per second = 1.95 nano, + 0.01 flat: 10,000,001.95 nano, rounds to 10,000,002.
    expect(
      charge([
        [1_500n, parseRate('0.0000000013'), 1000n],
        [1, parseRate('0.01')],
      ]),
    ).toBe(10_000_002n);
    // 1 ms at 1 atto a second is a thousandth of an atto; 5e11 ms of it are half a nano exactly, which rounds up.
    expect(charge([[1, 1n, 1000n]])).toBe(0n);
    expect(
      charge([
        [500_000_000_000, 1n, 1000n],
        [1, 0n, 7n],
      ]),
    ).toBe(1n); // 0.5 nano exactly, half up, across two denominators
    expect(() => charge([[1, 1n, 0n]])).toThrow(RangeError);
  });

  it('charges whole-unit terms alone as it charges them beside a finer unit of nothing (its shortcut is the general sum)', () => {
    const term = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 9n }), fc.bigInt({ min: 0n, max: 10n ** 15n }));
    fc.assert(
      fc.property(fc.array(term, { minLength: 1, maxLength: 6 }), fc.bigInt({ min: 2n, max: 10n ** 6n }), (terms, per) => {
        const whole: [bigint, bigint][] = terms.map(([q, rate]) => [q, rate]);
        expect(charge(whole)).toBe(charge([...whole, [0n, 1n, per]]));
        // And the one rounding, half up, done by hand.
        const atto = whole.reduce((sum, [q, rate]) => sum + q * rate, 0n);
        expect(charge(whole)).toBe((atto + 500_000_000n) / 1_000_000_000n);
      }),
    );
  });

  it('formats exact strings and two-decimal numbers', () => {
    expect(formatUsd(0n)).toBe('0');
    expect(formatUsd(12_000_000_000n)).toBe('12');
    expect(formatUsd(-5_000_000n)).toBe('-0.005');
    expect(toCents2(parseUsd('7.5'))).toBe(7.5);
    expect(toCents2(parseUsd('0.005'))).toBe(0.01);
    expect(toCents2(parseUsd('0.0049'))).toBe(0);
    expect(toCents2(parseUsd('-0.005'))).toBe(-0.01);
    expect(formatRate(parseRate('0.000002'))).toBe('0.000002');
  });
});

describe('mostUnits', () => {
  it('is the largest count whose charge, rounded as charge() rounds, stays within the budget', () => {
    // 9 prompt tokens at 0.001 and one fee of 0.0005 leave 0.0405 of 0.05: 20 tokens at 0.002 (0.04) fit, 21 do not.
    const spent: Array<[number, bigint]> = [
      [9, parseRate('0.001')],
      [1, parseRate('0.0005')],
    ];
    expect(mostUnits(parseUsd('0.05'), spent, parseRate('0.002'))).toBe(20n);
    // Rounding: at 0.6 nano a unit, 2 units are 1.2 nano (rounds to 1, fits 1 nano); 3 are 1.8 (rounds to 2).
    expect(mostUnits(1n, [], parseRate('0.0000000006'))).toBe(2n);
    expect(mostUnits(parseUsd('0.001'), spent, parseRate('0.002'))).toBe(-1n);
    expect(mostUnits(parseUsd('0.001'), [], 0n)).toBeUndefined();
    // A term in a finer unit (video milliseconds) is no whole-unit spend: refused rather than misread.
    expect(() => mostUnits(1n, [[1000, 1n, 1000n]], 1n)).toThrow(RangeError);
  });

  it('agrees with charge() on many budgets and rates', () => {
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 500; i++) {
      const budget = BigInt(next(1_000_000));
      const spent: Array<[number, bigint]> = [[next(50), BigInt(next(1_000_000_000)) * 1000n]];
      const rate = BigInt(1 + next(2_000_000_000)) * 100n;
      const k = mostUnits(budget, spent, rate) as bigint;
      if (k >= 0n) expect(charge([...spent, [k, rate]])).toBeLessThanOrEqual(budget);
      expect(charge([...spent, [k + 1n, rate]])).toBeGreaterThan(budget);
    }
  });
});
