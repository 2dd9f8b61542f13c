import { buildRegistry, parseConfig } from '@gateway/config';
import { inputCharge, inputWorstCase, maxInputTokens } from './input';

const model = buildRegistry(
  parseConfig({
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [
      {
        id: 't/emb',
        name: 'e',
        category: 'embedding',
        status: 'available',
        pricing: { prompt: '0.0000001' },
        endpoints: [{ provider: 'sim', model: 'e' }],
      },
    ],
  }),
).get('t/emb')!;

describe('embedding and rerank pricing', () => {
  it('bounds strings by their UTF-8 bytes and token arrays by their length', () => {
    expect(maxInputTokens(['héllo', '日本'])).toBe(6 + 6);
    expect(maxInputTokens([[1, 2], [3]])).toBe(3);
  });

  it('holds the bound and charges the tokens counted, both at the prompt price', () => {
    expect(inputWorstCase(model, ['héllo', '日本'])).toBe(1_200n); // 12 × 100 nano
    expect(inputCharge(model, 5)).toBe(500n);
  });
});
