import { ConfigError, parseConfig } from './load';

/** The per-model keys the catalogue and the single-model route read: all optional, each checked when given. */
const model = (id: string, extra: object = {}) => ({
  id,
  name: id,
  category: 'embedding',
  status: 'available',
  pricing: { prompt: '0.00000002' },
  endpoints: [{ provider: 'sim', model: 'x' }],
  ...extra,
});
const config = (...models: object[]) => ({ providers: [{ id: 'sim', kind: 'simulated' }], models });

const refusal = (raw: unknown): string => {
  try {
    parseConfig(raw);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('accepted');
};

describe('catalogue keys of a model', () => {
  it('a model may give every one of them', () => {
    const keys = {
      reference_price: 0.05,
      speed: 'fast',
      capabilities: ['embeddings', 'multilingual'],
      added_at: '2025-06-01',
      alias_target: 'a/base',
      input_modalities: ['text', 'image'],
      featured: true,
    };
    expect(parseConfig(config(model('a/base'), model('a/latest', keys))).models[1]).toMatchObject(keys);
  });

  it('added_at takes a full ISO timestamp with its offset', () => {
    expect(() => parseConfig(config(model('a/m', { added_at: '2025-06-01T09:30:00+02:00' })))).not.toThrow();
  });

  it.each([
    ['an impossible date', { added_at: '2025-02-30' }, 'models.0.added_at'],
    ['a timestamp without its offset', { added_at: '2025-06-01T09:30:00' }, 'models.0.added_at'],
    ['a negative reference price', { reference_price: -1 }, 'models.0.reference_price'],
    ['an empty speed', { speed: '' }, 'models.0.speed'],
    ['a capability listed twice', { capabilities: ['embeddings', 'embeddings'] }, 'models.0.capabilities.1: "embeddings" is listed twice'],
    ['an unknown input modality', { input_modalities: ['smell'] }, 'models.0.input_modalities.0'],
    ['no input modality', { input_modalities: [] }, 'models.0.input_modalities'],
    ['an alias of an unknown model', { alias_target: 'a/nothing' }, 'models.0.alias_target: unknown model "a/nothing"'],
    ['an alias of itself', { alias_target: 'a/m' }, 'models.0.alias_target: a model cannot be an alias of itself'],
  ])('refuses %s, naming the field', (_name, extra, message) => {
    expect(refusal(config(model('a/m', extra)))).toContain(message);
  });

  it('an alias names a concrete model: never another alias', () => {
    const raw = config(model('a/base'), model('a/mid', { alias_target: 'a/base' }), model('a/top', { alias_target: 'a/mid' }));
    expect(refusal(raw)).toContain('models.2.alias_target: "a/mid" is itself an alias; name its target');
  });

  it('an alias names a model of its own category, so it answers the same routes', () => {
    const raw = config(model('a/base', { category: 'rerank' }), model('a/alias', { alias_target: 'a/base' }));
    expect(refusal(raw)).toContain('models.1.alias_target: "a/base" is a rerank model, not embedding');
  });
});
