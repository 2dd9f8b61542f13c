import type { ResolvedModel } from '@gateway/config';
import { formatRate, parseRate } from '@gateway/money';
import { architectureOf } from '../derive/architecture';
import { supportsReasoning } from '../derive/capabilities';
import { headlineOf } from '../derive/headline';
import { discountOf } from '../derive/reference';

/** Rates are shown as the config wrote them, normalised ("0.0000010" → "0.000001"). */
const rate = (s: string | undefined) => (s === undefined ? null : formatRate(parseRate(s)));

export function listingItem(m: ResolvedModel) {
  const c = m.config;
  return {
    id: c.id,
    canonical_slug: c.id,
    name: c.name,
    description: c.description ?? '',
    category: c.category,
    status: c.status,
    ...headlineOf(m),
    ...(c.category === 'text' ? { context_length: c.context_length ?? null } : {}),
    pricing: {
      prompt: rate(c.pricing.prompt),
      completion: rate(c.pricing.completion),
      request: rate(c.pricing.request),
      image: rate(c.pricing.image),
    },
    supported_parameters: c.supported_parameters ?? [],
  };
}

/** Narrowed listings (per-category routes) omit canonical_slug and context_length. */
export function narrowedItem(m: ResolvedModel) {
  const { canonical_slug: _slug, context_length: _ctx, ...rest } = listingItem(m) as ReturnType<typeof listingItem> & { context_length?: number };
  return rest;
}

export function modelRecord(m: ResolvedModel) {
  return {
    ...listingItem(m),
    max_output_tokens: m.config.max_output_tokens ?? null,
    architecture: architectureOf(m),
    alias_target: m.config.alias_target ?? null,
    reasoning: { supported: supportsReasoning(m) },
    discount: discountOf(m),
  };
}
