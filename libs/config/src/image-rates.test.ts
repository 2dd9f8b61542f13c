import { parseRate } from '@gateway/money';
import { DEFAULT_CONFIG } from './default-config';
import { ConfigError, parseConfig } from './load';
import { buildRegistry } from './registry';

/** The demo config with its image model priced as `pricing` says. */
function withImagePricing(pricing: Record<string, unknown>) {
  const c = JSON.parse(JSON.stringify(DEFAULT_CONFIG));
  const i = c.models.findIndex((m: { category: string }) => m.category === 'image');
  c.models[i].pricing = pricing;
  return { config: c, index: i, id: c.models[i].id as string };
}

describe('pricing.image_by_resolution', () => {
  it('resolves each rate exactly, keyed case- and space-insensitively, beside the image rate', () => {
    const { config, id } = withImagePricing({ image: '0.04', image_by_resolution: { '2k': '0.08', '1024 x 1024': '0.000000000000000001' } });
    const rates = buildRegistry(parseConfig(config)).get(id)!.rates;
    expect(rates.image).toBe(parseRate('0.04'));
    expect([...rates.imageByResolution]).toEqual([
      ['2K', parseRate('0.08')],
      ['1024X1024', 1n],
    ]);
  });

  it('is empty when absent', () => {
    const { config, id } = withImagePricing({ image: '0.02' });
    expect(buildRegistry(parseConfig(config)).get(id)!.rates.imageByResolution.size).toBe(0);
  });

  it.each([
    [
      'without pricing.image, which prices every other resolution',
      { image_by_resolution: { '2K': '0.08' } },
      'pricing.image: required with image_by_resolution',
    ],
    ['with a float rate', { image: '0.04', image_by_resolution: { '2K': 0.08 } }, 'pricing.image_by_resolution.2K'],
    ['with a rate that is not a decimal string', { image: '0.04', image_by_resolution: { '2K': '8e-2' } }, 'pricing.image_by_resolution.2K'],
    [
      'with two keys for one resolution',
      { image: '0.04', image_by_resolution: { '2K': '0.08', '2k': '0.09' } },
      'the same resolution as another key',
    ],
  ])('refuses a model %s, naming the field', (_name, pricing, message) => {
    const { config, index } = withImagePricing(pricing);
    expect(() => parseConfig(config)).toThrow(ConfigError);
    expect(() => parseConfig(config)).toThrow(`models.${index}.`);
    expect(() => parseConfig(config)).toThrow(message);
  });
});
