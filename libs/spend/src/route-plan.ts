import type { ProviderPreferences, ResolvedEndpoint, ResolvedModel } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import { formatRate, parseRate } from '@gateway/money';
import type { SpeedFigures } from './endpoint-speed';

/** One model and the endpoints a call may try on it, in the order they are tried. */
export interface PlannedModel {
  model: ResolvedModel;
  endpoints: ResolvedEndpoint[];
}

export interface PlanInput {
  /** The servable models in the client's order (the requested one, then its `models` fallbacks). */
  models: ResolvedModel[];
  prefs?: ProviderPreferences;
  /** Whether an endpoint's circuit lets a call through now. */
  healthy(endpointKey: string): boolean;
  speed(endpointKey: string): SpeedFigures;
  /** A number in [0, 1): draws `routing: weighted` orders. */
  random(): number;
}

type PriceField = keyof NonNullable<ProviderPreferences['max_price']>;

/**
 * Which endpoints a call tries, in which order. Per model: refuse it when priced above `max_price`; keep the
 * endpoints `only` allows and `ignore` does not name; order them by the client's `sort`, else the model's `routing`;
 * move the providers of `order` to the front in that order; drop those whose circuit is open. Across models the
 * client's order stands. `allow_fallbacks: false` keeps only the first endpoint left.
 *
 * Throws 400 invalid_request naming the preference when the client's preferences exclude every endpoint of every
 * model, and 409 model_unavailable when what they allow is unhealthy right now.
 */
export function planRoute(input: PlanInput): PlannedModel[] {
  const prefs = input.prefs ?? {};
  const refusals: string[] = [];
  const allowed: PlannedModel[] = [];
  for (const model of input.models) {
    const dearer = aboveMaxPrice(model, prefs.max_price);
    if (dearer) {
      refusals.push(`${model.config.id} is priced above provider.max_price (${dearer})`);
      continue;
    }
    const endpoints = model.endpoints.filter((e) => permitted(e, prefs));
    if (endpoints.length === 0) {
      refusals.push(`provider.only/ignore exclude every provider of ${model.config.id} (${providersOf(model).join(', ')})`);
      continue;
    }
    allowed.push({ model, endpoints: preferred(ordered(model, endpoints, prefs, input), prefs.order) });
  }
  if (allowed.length === 0) throw new GatewayError('invalid_request', `Invalid request: provider: no endpoint is left: ${refusals.join('; ')}`);

  const plan: PlannedModel[] = [];
  for (const p of allowed) {
    const endpoints = p.endpoints.filter((e) => input.healthy(e.key));
    if (endpoints.length > 0) plan.push({ model: p.model, endpoints });
  }
  if (plan.length === 0) {
    const names = allowed.map((p) => p.model.config.id).join(', ');
    throw new GatewayError(
      'model_unavailable',
      input.prefs ? `No allowed upstream of ${names} is healthy right now` : `Model ${names} has no healthy upstream right now`,
    );
  }
  if (prefs.allow_fallbacks === false) return [{ model: plan[0].model, endpoints: [plan[0].endpoints[0]] }];
  return plan;
}

function permitted(e: ResolvedEndpoint, prefs: ProviderPreferences): boolean {
  // Ids are compared as given: provider ids are the operator's config keys, and a near miss must not match.
  if (prefs.only && !prefs.only.includes(e.provider.id)) return false;
  return !prefs.ignore?.includes(e.provider.id);
}

function providersOf(model: ResolvedModel): string[] {
  return [...new Set(model.endpoints.map((e) => e.provider.id))];
}

/** The first price of the model above the client's ceiling, as "prompt 0.000003 > 0.000002"; undefined when none is. */
function aboveMaxPrice(model: ResolvedModel, max: ProviderPreferences['max_price']): string | undefined {
  if (!max) return undefined;
  const r = model.rates;
  // The dearest image rate counts: the ceiling is a promise about every image the model may be asked for.
  let image = r.image;
  // A loop, not Math.max: rates are bigints.
  for (const v of r.imageByResolution.values()) if (v > image) image = v;
  const rates: Record<PriceField, bigint> = { prompt: r.prompt, completion: r.completion, request: r.request, image };
  for (const field of ['prompt', 'completion', 'request', 'image'] as const) {
    const ceiling = max[field];
    if (ceiling === undefined) continue;
    const limit = parseRate(ceiling);
    if (rates[field] > limit) return `${field} ${formatRate(rates[field])} > ${formatRate(limit)}`;
  }
  return undefined;
}

/** The client's `sort` wins over the operator's `routing`, as OpenRouter's sort turns its load balancing off. */
function ordered(model: ResolvedModel, endpoints: ResolvedEndpoint[], prefs: ProviderPreferences, input: PlanInput): ResolvedEndpoint[] {
  if (prefs.sort === 'latency') return byFigure(endpoints, (e) => input.speed(e.key).latencyMs, 'asc', 'last');
  if (prefs.sort === 'throughput') return byFigure(endpoints, (e) => input.speed(e.key).tokensPerSecond, 'desc', 'last');
  switch (model.config.routing ?? 'in_order') {
    case 'in_order':
      return endpoints;
    // Unmeasured first: an endpoint nobody has called would otherwise never get the call that measures it.
    case 'lowest_latency':
      return byFigure(endpoints, (e) => input.speed(e.key).latencyMs, 'asc', 'first');
    case 'weighted':
      return weightedOrder(endpoints, input.random);
  }
}

/**
 * A stable sort by a figure; endpoints without one keep their config order, before or after the measured ones.
 * A client's sort puts them last (it asked for the fastest known); the operator's lowest_latency puts them first.
 */
function byFigure(
  endpoints: ResolvedEndpoint[],
  figure: (e: ResolvedEndpoint) => number | undefined,
  direction: 'asc' | 'desc',
  unmeasured: 'first' | 'last',
): ResolvedEndpoint[] {
  const measured = endpoints.filter((e) => figure(e) !== undefined);
  const unknown = endpoints.filter((e) => figure(e) === undefined);
  const sign = direction === 'asc' ? 1 : -1;
  measured.sort((a, b) => sign * ((figure(a) as number) - (figure(b) as number)));
  return unmeasured === 'first' ? [...unknown, ...measured] : [...measured, ...unknown];
}

/** Draws without replacement, each endpoint by its weight: the first pick splits traffic in the weights' proportions. */
function weightedOrder(endpoints: ResolvedEndpoint[], random: () => number): ResolvedEndpoint[] {
  const left = [...endpoints];
  const out: ResolvedEndpoint[] = [];
  while (left.length > 0) {
    const total = left.reduce((n, e) => n + (e.weight ?? 1), 0);
    let point = random() * total;
    let i = 0;
    while (i < left.length - 1 && point >= (left[i].weight ?? 1)) {
      point -= left[i].weight ?? 1;
      i += 1;
    }
    out.push(...left.splice(i, 1));
  }
  return out;
}

/** `order`'s providers first, in its order; the rest keep theirs. Ids no endpoint has are ignored, as OpenRouter does. */
function preferred(endpoints: ResolvedEndpoint[], order: string[] | undefined): ResolvedEndpoint[] {
  if (!order?.length) return endpoints;
  const rank = (e: ResolvedEndpoint) => {
    const i = order.indexOf(e.provider.id);
    return i === -1 ? order.length : i;
  };
  return endpoints
    .map((e, i) => ({ e, i }))
    .sort((a, b) => rank(a.e) - rank(b.e) || a.i - b.i)
    .map((x) => x.e);
}
