import { DEFAULT_CONFIG, buildRegistry, parseConfig, providerPreferencesSchema } from './index';

const base = () => JSON.parse(JSON.stringify(DEFAULT_CONFIG));

describe('model routing in the config', () => {
  it('defaults to none (in order) and keeps configs without it valid', () => {
    const cfg = parseConfig(base());
    expect(cfg.models.every((m) => m.routing === undefined)).toBe(true);
  });

  it('takes weighted with weights per endpoint, and the registry carries them', () => {
    const c = base();
    c.models[0].routing = 'weighted';
    c.models[0].endpoints = [
      { ...c.models[0].endpoints[0], weight: 3 },
      { ...c.models[0].endpoints[0], weight: 1 },
    ];
    const registry = buildRegistry(parseConfig(c));
    expect(registry.get(c.models[0].id)?.endpoints.map((e) => e.weight)).toEqual([3, 1]);
  });

  it('refuses a weight without routing weighted, and an unknown strategy', () => {
    const c = base();
    c.models[0].endpoints[0].weight = 2;
    expect(() => parseConfig(c)).toThrow(`models.0.endpoints.0.weight: only with routing: weighted`);
    const d = base();
    d.models[0].routing = 'fastest';
    expect(() => parseConfig(d)).toThrow('models.0.routing');
  });
});

describe('providerPreferencesSchema', () => {
  it('takes every OpenRouter field the gateway honours', () => {
    const prefs = {
      order: ['a'],
      only: ['a', 'b'],
      ignore: ['c'],
      allow_fallbacks: false,
      sort: 'latency',
      max_price: { prompt: 0.000002, completion: '0.00001', request: 0, image: '0.04' },
    };
    expect(providerPreferencesSchema.parse(prefs)).toEqual(prefs);
  });

  it.each([
    ['a field it does not honour', { data_collection: 'deny' }, 'unrecognized_keys'],
    ['an empty only', { only: [] }, 'provider.only: name at least one provider'],
    ['a non-array order', { order: 'a' }, 'provider.order must be an array of provider ids'],
    ['an unknown sort', { sort: 'price' }, 'sort'],
    ['a negative price', { max_price: { prompt: -1 } }, 'max_price'],
    ['a price finer than atto-USD', { max_price: { prompt: 1e-20 } }, 'must have at most 18 decimals'],
    ['a price in words', { max_price: { prompt: 'cheap' } }, 'must be a decimal USD amount'],
    ['a non-object', 'fast', 'provider must be an object'],
  ])('refuses %s', (_name, value, message) => {
    const r = providerPreferencesSchema.safeParse(value);
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toContain(message);
  });
});
