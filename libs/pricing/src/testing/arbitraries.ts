import { buildRegistry, type GatewayConfig, type ResolvedModel } from '@gateway/config';
import { formatRate } from '@gateway/money';
import fc from 'fast-check';

/**
 * Models for the property tests, resolved by the registry (so `config.pricing` and `rates` agree as in production):
 * every rate a decimal string of up to 18 places, from sub-nano (where rounding decides) to dollars. The config
 * schema is left out (a millisecond a model, most of these tests' time); properties.test.ts checks that it
 * accepts samples of every shape built here.
 */
const rate = fc.oneof(fc.bigInt({ min: 0n, max: 10n ** 9n }), fc.bigInt({ min: 0n, max: 10n ** 19n })).map(formatRate);

const RESOLUTIONS = ['1K', '2K', '4K', '1024x1024', '1792x1024'];

/** The config a model is resolved from, as a config file would state it. */
function configOf(category: string, pricing: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [{ id: 'p/m', name: 'm', category, status: 'available', pricing, endpoints: [{ provider: 'sim', model: 'm' }], ...extra }],
  };
}

function resolved(category: string, pricing: Record<string, unknown>, extra: Record<string, unknown> = {}): ResolvedModel {
  const model = buildRegistry(configOf(category, pricing, extra) as unknown as GatewayConfig).get('p/m');
  if (!model) throw new Error('the model did not resolve');
  return model;
}

/** A text model, or (one time in four) one without max_output_tokens, which only a hand-built model can be. */
export const textModel = fc
  .record({
    prompt: rate,
    completion: rate,
    request: fc.option(rate, { nil: undefined }),
    // Cache rates, each set or not, either side of the prompt rate.
    input_cache_read: fc.option(rate, { nil: undefined }),
    input_cache_write: fc.option(rate, { nil: undefined }),
    cap: fc.integer({ min: 1, max: 200_000 }),
    uncapped: fc.boolean(),
  })
  .map(({ prompt, completion, request, input_cache_read, input_cache_write, cap, uncapped }) => {
    const pricing = {
      prompt,
      completion,
      ...(request ? { request } : {}),
      ...(input_cache_read ? { input_cache_read } : {}),
      ...(input_cache_write ? { input_cache_write } : {}),
    };
    const m = resolved('text', pricing, { context_length: 1_000_000, max_output_tokens: cap });
    return uncapped ? { ...m, config: { ...m.config, max_output_tokens: undefined } } : m;
  });

export const inputModel = fc
  .record({ prompt: rate, category: fc.constantFrom('embedding', 'rerank') })
  .map(({ prompt, category }) => resolved(category, { prompt }));

export const imageModel = fc
  .record({ image: fc.option(rate, { nil: undefined }), keyed: fc.subarray(RESOLUTIONS), rates: fc.array(rate, { minLength: 5, maxLength: 5 }) })
  .map(({ image, keyed, rates }) => {
    // A per-resolution table needs pricing.image beside it (the schema says so).
    const byResolution = Object.fromEntries(keyed.map((k, i) => [k, rates[i]]));
    return resolved('image', keyed.length ? { image: image ?? '0', image_by_resolution: byResolution } : image ? { image } : {});
  });

/** A resolution asked for: listed or not, in any case, or none. */
export const resolution = fc.option(fc.constantFrom(...RESOLUTIONS, '2k', ' 4k ', '512x512', '8K'), { nil: undefined });

export const audioModel = fc.record({ character: rate, second: rate }).map((pricing) => resolved('audio', pricing));

export const videoModel = fc
  .record({
    second: rate,
    request: fc.option(rate, { nil: undefined }),
    defaultDuration: fc.option(fc.integer({ min: 1, max: 600 }), { nil: undefined }),
  })
  .map(({ second, request, defaultDuration }) =>
    resolved('video', { second, ...(request ? { request } : {}) }, defaultDuration ? { default_duration: defaultDuration } : {}),
  );

/** Seconds as JSON may carry them: whole, or with a few decimals, as the schemas accept. */
export const seconds = fc.oneof(fc.integer({ min: 1, max: 600 }), fc.double({ min: 0.001, max: 600, noNaN: true }));
