import { buildRegistry, parseConfig } from '@gateway/config';
import { formatUsd } from '@gateway/money';
import { cacheDiscount, dearestPromptRate, textCharge, textWorstCase } from './text';

/** A text model as a config file states it; `cache` adds input_cache_read / input_cache_write. */
const modelOf = (cache: Record<string, string> = {}) => {
  const config = parseConfig({
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [
      {
        id: 'a/m',
        name: 'm',
        category: 'text',
        status: 'available',
        context_length: 200_000,
        max_output_tokens: 1000,
        pricing: { prompt: '0.000003', completion: '0.000015', ...cache },
        endpoints: [{ provider: 'sim', model: 'x' }],
      },
    ],
  });
  return buildRegistry(config).get('a/m')!;
};

// The rates of a model priced like Claude Sonnet: $3 / $15 per million, cache reads a tenth, cache writes 1.25×.
const cached = modelOf({ input_cache_read: '0.0000003', input_cache_write: '0.00000375' });
const uncached = modelOf();

describe('cached prompt tokens, priced exactly (the sums below are worked by hand)', () => {
  it('prices cache reads and writes at their own rates, the rest of the prompt at the prompt rate', () => {
    // 3100 prompt tokens: 2000 read from the cache, 1000 written to it, 100 neither; 500 output tokens.
    //   100 × 0.000003 = 0.0003; 2000 × 0.0000003 = 0.0006; 1000 × 0.00000375 = 0.00375; 500 × 0.000015 = 0.0075
    //   total 0.01215
    expect(formatUsd(textCharge(cached, 3100, 500, { read: 2000, write: 1000 }))).toBe('0.01215');
  });

  it('a model without cache rates charges every prompt token at the prompt rate, as before', () => {
    // 3100 × 0.000003 = 0.0093; + 0.0075 = 0.0168
    expect(formatUsd(textCharge(uncached, 3100, 500, { read: 2000, write: 1000 }))).toBe('0.0168');
    expect(textCharge(uncached, 3100, 500, { read: 2000, write: 1000 })).toBe(textCharge(uncached, 3100, 500));
  });

  it('only a read rate: writes cost the prompt rate', () => {
    const readOnly = modelOf({ input_cache_read: '0.0000015' });
    // 1100 × 0.000003 = 0.0033; 2000 × 0.0000015 = 0.003; 0.0075 output: 0.0138
    expect(formatUsd(textCharge(readOnly, 3100, 500, { read: 2000, write: 1000 }))).toBe('0.0138');
  });

  it('the cache discount is the uncached charge minus the charge: reads save, writes cost extra', () => {
    // Reads save 2000 × (0.000003 − 0.0000003) = 0.0054; writes cost 1000 × (0.00000375 − 0.000003) = 0.00075 more.
    expect(formatUsd(cacheDiscount(cached, 3100, 500, { read: 2000, write: 1000 }))).toBe('0.00465');
    // Only writes: the discount is negative, 1000 × 0.00000075.
    expect(cacheDiscount(cached, 1100, 500, { write: 1000 })).toBe(-750_000n);
    expect(cacheDiscount(uncached, 3100, 500, { read: 2000, write: 1000 })).toBe(0n);
  });

  it('reasoning tokens are completion tokens: priced once, in the completion count', () => {
    // 10 prompt, 300 completion of which 250 reasoning: 10 × 0.000003 + 300 × 0.000015 = 0.00003 + 0.0045
    expect(formatUsd(textCharge(uncached, 10, 300))).toBe('0.00453');
  });

  it('the hold prices every prompt token at the dearest of the prompt and cache rates', () => {
    expect(dearestPromptRate(cached)).toBe(cached.rates.inputCacheWrite);
    expect(dearestPromptRate(uncached)).toBe(uncached.rates.prompt);
    // "hello" is 5 bytes + 8 framing tokens = 13 tokens × 0.00000375 = 0.00004875; 1000 × 0.000015 = 0.015
    expect(formatUsd(textWorstCase(cached, 'hello', 1, undefined))).toBe('0.01504875');
    // A cheaper read rate never lowers the hold below the prompt rate's: 13 × 0.000003 + 0.015
    expect(formatUsd(textWorstCase(modelOf({ input_cache_read: '0.0000003' }), 'hello', 1, undefined))).toBe('0.015039');
  });

  it('the config refuses a cache rate that is not a decimal string', () => {
    expect(() => modelOf({ input_cache_read: '3e-7' })).toThrow();
  });
});
