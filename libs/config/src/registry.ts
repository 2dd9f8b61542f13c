import { parseRate } from '@gateway/money';
import { resolutionKey, type GatewayConfig, type ModelConfig, type ProviderConfig } from './schema';

export interface ResolvedEndpoint {
  /** `<provider id>/<upstream model>`: stable name for circuits, logs and metrics; never shown to clients. */
  key: string;
  provider: ProviderConfig;
  upstreamModel: string;
  /** Its share under `routing: weighted`; absent is 1. */
  weight?: number;
}

export interface ResolvedModel {
  config: ModelConfig;
  /** Per-unit rates in atto-USD; absent prices are 0. */
  rates: {
    prompt: bigint;
    completion: bigint;
    request: bigint;
    image: bigint;
    /** Per image at a resolution, keyed by `resolutionKey`; `image` prices the resolutions absent here. */
    imageByResolution: ReadonlyMap<string, bigint>;
    character: bigint;
    second: bigint;
    /** Per prompt token read from / written to the upstream's prompt cache; absent, the prompt rate (as before these existed). */
    inputCacheRead?: bigint;
    inputCacheWrite?: bigint;
  };
  endpoints: ResolvedEndpoint[];
}

export interface ModelRegistry {
  get(slug: string): ResolvedModel | undefined;
  all(): ResolvedModel[];
}

export function buildRegistry(config: GatewayConfig): ModelRegistry {
  const providers = new Map(config.providers.map((p) => [p.id, p]));
  // parseConfig already refuses unknown providers; this guards a config built by hand.
  const providerOf = (model: string, id: string): ProviderConfig => {
    const provider = providers.get(id);
    if (!provider) throw new Error(`model ${model}: unknown provider "${id}"`);
    return provider;
  };
  const models = new Map<string, ResolvedModel>();
  for (const m of config.models) {
    const p = m.pricing;
    models.set(m.id, {
      config: m,
      rates: {
        prompt: parseRate(p.prompt ?? '0'),
        completion: parseRate(p.completion ?? '0'),
        request: parseRate(p.request ?? '0'),
        image: parseRate(p.image ?? '0'),
        imageByResolution: new Map(Object.entries(p.image_by_resolution ?? {}).map(([k, v]) => [resolutionKey(k), parseRate(v)])),
        character: parseRate(p.character ?? '0'),
        second: parseRate(p.second ?? '0'),
        ...(p.input_cache_read === undefined ? {} : { inputCacheRead: parseRate(p.input_cache_read) }),
        ...(p.input_cache_write === undefined ? {} : { inputCacheWrite: parseRate(p.input_cache_write) }),
      },
      endpoints: m.endpoints.map((e) => ({
        key: `${e.provider}/${e.model}`,
        provider: providerOf(m.id, e.provider),
        upstreamModel: e.model,
        weight: e.weight,
      })),
    });
  }
  const list = [...models.values()];
  return { get: (slug) => models.get(slug), all: () => list };
}
