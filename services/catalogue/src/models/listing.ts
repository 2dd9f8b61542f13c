import type { ResolvedModel } from '@gateway/config';
import { listedRates } from '@gateway/pricing';
import { architectureOf } from '../derive/architecture';
import { supportsReasoning } from '../derive/capabilities';
import { headlineOf } from '../derive/headline';
import { discountOf } from '../derive/reference';

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
    // The contract's four, then, as an addition, the audio and video axes (per input character, per second).
    pricing: listedRates(m),
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
