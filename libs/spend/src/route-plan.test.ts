import type { ModelConfig, ProviderPreferences, ResolvedEndpoint, ResolvedModel } from '@gateway/config';
import type { GatewayError } from '@gateway/errors';
import { parseRate } from '@gateway/money';
import fc from 'fast-check';
import type { SpeedFigures } from './endpoint-speed';
import { type PlanInput, planRoute } from './route-plan';

const PROVIDERS = ['alpha', 'beta', 'gamma', 'delta', 'eps'];

function model(id: string, providers: string[], extra: Partial<ModelConfig> = {}, prompt = '0.000001', weights: number[] = []): ResolvedModel {
  const endpoints: ResolvedEndpoint[] = providers.map((p, i) => ({
    key: `${p}/${id}`,
    provider: { id: p, kind: 'simulated' },
    upstreamModel: id,
    weight: weights[i],
  }));
  return {
    config: { id, name: id, category: 'text', status: 'available', pricing: { prompt }, endpoints: [], ...extra } as ModelConfig,
    rates: {
      prompt: parseRate(prompt),
      completion: 0n,
      request: 0n,
      image: 0n,
      imageByResolution: new Map(),
      character: 0n,
      second: 0n,
    },
    endpoints,
  };
}

function input(models: ResolvedModel[], prefs?: ProviderPreferences, over: Partial<PlanInput> = {}): PlanInput {
  return { models, prefs, healthy: () => true, speed: () => ({}), random: () => 0, ...over };
}

const keys = (plan: ReturnType<typeof planRoute>) => plan.flatMap((p) => p.endpoints.map((e) => e.key));
const refusal = (f: () => unknown): GatewayError => {
  try {
    f();
  } catch (e) {
    return e as GatewayError;
  }
  throw new Error('expected a refusal');
};

const providerList = fc.uniqueArray(fc.constantFrom(...PROVIDERS), { minLength: 1, maxLength: PROVIDERS.length });
const someIds = fc.uniqueArray(fc.constantFrom(...PROVIDERS, 'typo'), { maxLength: 6 });
const prefsArb: fc.Arbitrary<ProviderPreferences> = fc.record(
  {
    order: someIds,
    only: someIds.filter((a) => a.length > 0),
    ignore: someIds,
    allow_fallbacks: fc.boolean(),
    sort: fc.constantFrom('latency' as const, 'throughput' as const),
  },
  { requiredKeys: [] },
);
const modelsArb = fc
  .array(providerList, { minLength: 1, maxLength: 3 })
  .chain((lists) =>
    fc
      .tuple(...lists.map(() => fc.constantFrom('in_order' as const, 'lowest_latency' as const, 'weighted' as const)))
      .map((routings) => lists.map((l, i) => model(`m/${i}`, l, { routing: routings[i] }))),
  );
const speedArb = fc.dictionary(
  fc.string(),
  fc.record({ latencyMs: fc.nat(5000), tokensPerSecond: fc.nat(500) }, { requiredKeys: [] }) as fc.Arbitrary<SpeedFigures>,
);

describe('planRoute', () => {
  it('never plans an endpoint that only leaves out or ignore names, tries at most one without fallbacks, and respects order', () => {
    fc.assert(
      fc.property(modelsArb, prefsArb, speedArb, fc.double({ min: 0, max: 0.999 }), (models, prefs, speed, r) => {
        let plan: ReturnType<typeof planRoute>;
        try {
          plan = planRoute(input(models, prefs, { speed: (k) => speed[k] ?? {}, random: () => r }));
        } catch (e) {
          // Refused only when the preferences leave no endpoint of any model.
          expect((e as GatewayError).code).toBe('invalid_request');
          const left = models
            .flatMap((m) => m.endpoints)
            .filter((e) => (!prefs.only || prefs.only.includes(e.provider.id)) && !prefs.ignore?.includes(e.provider.id));
          expect(left).toEqual([]);
          return;
        }
        const planned = plan.flatMap((p) => p.endpoints);
        expect(planned.length).toBeGreaterThan(0);
        for (const e of planned) {
          if (prefs.only) expect(prefs.only).toContain(e.provider.id);
          expect(prefs.ignore ?? []).not.toContain(e.provider.id);
        }
        if (prefs.allow_fallbacks === false) expect(planned).toHaveLength(1);
        // Within each model, the providers `order` names come first, in its order.
        for (const p of plan) {
          const ranks = p.endpoints.map((e) => {
            const i = (prefs.order ?? []).indexOf(e.provider.id);
            return i === -1 ? Number.POSITIVE_INFINITY : i;
          });
          expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
        }
        // The client's model order stands.
        const ids = plan.map((p) => p.model.config.id);
        expect(ids).toEqual(models.map((m) => m.config.id).filter((id) => ids.includes(id)));
      }),
    );
  });

  it('keeps every allowed endpoint when fallbacks are allowed', () => {
    fc.assert(
      fc.property(modelsArb, prefsArb, (models, prefs) => {
        const p = { ...prefs, allow_fallbacks: true };
        const allowed = models
          .flatMap((m) => m.endpoints)
          .filter((e) => (!p.only || p.only.includes(e.provider.id)) && !p.ignore?.includes(e.provider.id))
          .map((e) => e.key)
          .sort();
        if (allowed.length === 0) return;
        expect(keys(planRoute(input(models, p))).sort()).toEqual(allowed);
      }),
    );
  });

  it('tries the providers of order first, then the rest in config order; unknown ids in order are ignored', () => {
    const m = model('a/m', ['alpha', 'beta', 'gamma']);
    expect(keys(planRoute(input([m], { order: ['typo', 'gamma'] })))).toEqual(['gamma/a/m', 'alpha/a/m', 'beta/a/m']);
  });

  it('allow_fallbacks false: the first allowed endpoint only, across models too', () => {
    const a = model('a/m', ['alpha', 'beta']);
    const b = model('b/m', ['gamma']);
    expect(keys(planRoute(input([a, b], { order: ['beta'], allow_fallbacks: false })))).toEqual(['beta/a/m']);
  });

  it('refuses with 400 naming the preference when only and ignore leave nothing', () => {
    const m = model('a/m', ['alpha', 'beta']);
    const e = refusal(() => planRoute(input([m], { only: ['alpha'], ignore: ['alpha'] })));
    expect(e.code).toBe('invalid_request');
    expect(e.message).toBe('Invalid request: provider: no endpoint is left: provider.only/ignore exclude every provider of a/m (alpha, beta)');
    expect(refusal(() => planRoute(input([m], { only: ['typo'] }))).code).toBe('invalid_request');
  });

  it('refuses a model priced above max_price, and keeps a fallback under it', () => {
    const dear = model('a/dear', ['alpha'], {}, '0.000003');
    const cheap = model('a/cheap', ['beta'], {}, '0.000001');
    const e = refusal(() => planRoute(input([dear], { max_price: { prompt: '0.000002' } })));
    expect(e.code).toBe('invalid_request');
    expect(e.message).toBe('Invalid request: provider: no endpoint is left: a/dear is priced above provider.max_price (prompt 0.000003 > 0.000002)');
    expect(keys(planRoute(input([dear, cheap], { max_price: { prompt: 0.000002 } })))).toEqual(['beta/a/cheap']);
    // Equal to the ceiling is not above it.
    expect(keys(planRoute(input([dear], { max_price: { prompt: '0.000003' } })))).toEqual(['alpha/a/dear']);
  });

  it('drops unhealthy endpoints after the preferences, and answers 409 when nothing allowed is healthy', () => {
    const m = model('a/m', ['alpha', 'beta']);
    const healthy = (k: string) => k !== 'alpha/a/m';
    expect(keys(planRoute(input([m], undefined, { healthy })))).toEqual(['beta/a/m']);
    expect(refusal(() => planRoute(input([m], { only: ['alpha'] }, { healthy }))).code).toBe('model_unavailable');
  });

  it('sort latency puts the fastest first, unmeasured last; throughput the most tokens per second first', () => {
    const m = model('a/m', ['alpha', 'beta', 'gamma']);
    const figures: Record<string, SpeedFigures> = {
      'beta/a/m': { latencyMs: 50, tokensPerSecond: 10 },
      'gamma/a/m': { latencyMs: 20, tokensPerSecond: 90 },
    };
    const speed = (k: string) => figures[k] ?? {};
    expect(keys(planRoute(input([m], { sort: 'latency' }, { speed })))).toEqual(['gamma/a/m', 'beta/a/m', 'alpha/a/m']);
    expect(keys(planRoute(input([m], { sort: 'throughput' }, { speed })))).toEqual(['gamma/a/m', 'beta/a/m', 'alpha/a/m']);
  });

  it("routing lowest_latency tries an unmeasured endpoint first, then the fastest; the client's sort overrides it", () => {
    const m = model('a/m', ['alpha', 'beta', 'gamma'], { routing: 'lowest_latency' });
    const figures: Record<string, SpeedFigures> = { 'alpha/a/m': { latencyMs: 90 }, 'gamma/a/m': { latencyMs: 10 } };
    const speed = (k: string) => figures[k] ?? {};
    expect(keys(planRoute(input([m], undefined, { speed })))).toEqual(['beta/a/m', 'gamma/a/m', 'alpha/a/m']);
    expect(keys(planRoute(input([m], { sort: 'latency' }, { speed })))).toEqual(['gamma/a/m', 'alpha/a/m', 'beta/a/m']);
  });

  it('routing weighted draws the first endpoint in proportion to the weights', () => {
    const m = model('a/m', ['alpha', 'beta'], { routing: 'weighted' }, '0.000001', [1, 3]);
    // The draw covers [0, 4): alpha owns [0, 1), beta [1, 4).
    expect(keys(planRoute(input([m], undefined, { random: () => 0.2 })))).toEqual(['alpha/a/m', 'beta/a/m']);
    expect(keys(planRoute(input([m], undefined, { random: () => 0.25 })))).toEqual(['beta/a/m', 'alpha/a/m']);
    const firsts = Array.from({ length: 400 }, (_, i) => keys(planRoute(input([m], undefined, { random: () => i / 400 })))[0]);
    expect(firsts.filter((k) => k === 'beta/a/m')).toHaveLength(300);
  });
});
