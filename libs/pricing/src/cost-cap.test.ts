import { buildRegistry, parseConfig } from '@gateway/config';
import { parseUsd } from '@gateway/money';
import { affordableImages, affordableOutput, textLeastCost } from './cost-cap';

const registry = buildRegistry(
  parseConfig({
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [
      {
        id: 'a/text',
        name: 'text',
        category: 'text',
        status: 'available',
        context_length: 8192,
        max_output_tokens: 1000,
        pricing: { prompt: '0.001', completion: '0.002', request: '0.0005' },
        endpoints: [{ provider: 'sim', model: 'x' }],
      },
      {
        id: 'a/cached',
        name: 'cached',
        category: 'text',
        status: 'available',
        context_length: 8192,
        max_output_tokens: 1000,
        pricing: { prompt: '0.001', completion: '0.002', input_cache_write: '0.00125' },
        endpoints: [{ provider: 'sim', model: 'x' }],
      },
      {
        id: 'a/free-output',
        name: 'free output',
        category: 'text',
        status: 'available',
        context_length: 8192,
        max_output_tokens: 1000,
        pricing: { prompt: '0.001' },
        endpoints: [{ provider: 'sim', model: 'x' }],
      },
      {
        id: 'a/image',
        name: 'image',
        category: 'image',
        status: 'available',
        pricing: { image: '0.04', image_by_resolution: { '2K': '0.07' } },
        endpoints: [{ provider: 'sim', model: 'x' }],
      },
    ],
  }),
);
const model = (id: string) => registry.get(id)!;
const load = { promptTokens: 9, choices: 1, calls: 1 };

describe('the cost cap, worked by hand', () => {
  it('affords the output tokens that fit beside the prompt and the fee', () => {
    // 0.05 - 9 × 0.001 - 0.0005 = 0.0405 leaves 20 tokens at 0.002 (0.040); 21 would be 0.042.
    expect(affordableOutput(model('a/text'), load, parseUsd('0.05'))).toBe(20);
    // Three choices share it: 0.0405 / (3 × 0.002) = 6.75, so 6 each.
    expect(affordableOutput(model('a/text'), { ...load, choices: 3 }, parseUsd('0.05'))).toBe(6);
    // A batch of two prompts pays two fees: 0.05 - 0.009 - 0.001 = 0.04 is exactly 20 tokens.
    expect(affordableOutput(model('a/text'), { ...load, calls: 2 }, parseUsd('0.05'))).toBe(20);
    // Free output is bounded by nothing the cap could say.
    expect(affordableOutput(model('a/free-output'), load, parseUsd('0.05'))).toBeUndefined();
  });

  it('prices the prompt at the dearest prompt rate, as the hold does', () => {
    // 0.05 - 9 × 0.00125 = 0.03875: 19 tokens (0.038).
    expect(affordableOutput(model('a/cached'), load, parseUsd('0.05'))).toBe(19);
  });

  it('the least a text call can cost: prompt, fee and one output token per choice', () => {
    // 9 × 0.001 + 0.0005 + 0.002 = 0.0115
    expect(textLeastCost(model('a/text'), load)).toBe(parseUsd('0.0115'));
    expect(textLeastCost(model('a/text'), { ...load, choices: 2 })).toBe(parseUsd('0.0135'));
    // At exactly the least, one token fits; a nano less, none.
    expect(affordableOutput(model('a/text'), load, parseUsd('0.0115'))).toBe(1);
    expect(affordableOutput(model('a/text'), load, parseUsd('0.011499999'))).toBe(0);
  });

  it('affords the images the cap covers at the rate the charge uses', () => {
    expect(affordableImages(model('a/image'), undefined, parseUsd('0.1'))).toBe(2);
    expect(affordableImages(model('a/image'), '2K', parseUsd('0.1'))).toBe(1);
    expect(affordableImages(model('a/image'), '2K', parseUsd('0.069999999'))).toBe(0);
  });
});
