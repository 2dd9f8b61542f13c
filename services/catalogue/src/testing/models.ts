import { buildRegistry, parseConfig, type ModelConfig, type ModelRegistry, type ResolvedModel } from '@gateway/config';

/** Test support: models through the real schema and registry, so defaults and validation apply as in production. */
export type ModelInput = Partial<Omit<ModelConfig, 'endpoints'>> & Pick<ModelConfig, 'id' | 'category'>;

const filled = (m: ModelInput) => ({
  name: m.id,
  status: 'available',
  pricing: {},
  ...(m.category === 'text' ? { context_length: 8192, max_output_tokens: 512 } : {}),
  ...m,
  endpoints: [{ provider: 'sim', model: 'x' }],
});

export function registryOf(...models: ModelInput[]): ModelRegistry {
  return buildRegistry(parseConfig({ providers: [{ id: 'sim', kind: 'simulated' }], models: models.map(filled) }));
}

export function modelOf(m: ModelInput): ResolvedModel {
  return registryOf(m).all()[0];
}
