import type { ModelConfig, ModelRegistry, ResolvedModel } from '@gateway/config';
import { GatewayError } from '@gateway/errors';

/**
 * The one answer to a model of another category, on every spending route (PaidCall.begin calls it for each named
 * model; a route that reads the model's prices before its hold calls it first): 400 `invalid_request` before any
 * hold. The contract lists "embeddings on a non-embedding model" among its 400s, and keeps 409 for a model that
 * could serve but cannot now; a model of another category never can, so the identical request fails identically.
 * A slug that does not exist is left to PaidCall: 409, as on every sync route.
 * Returns the model when it exists, for the route's own checks (a price it needs).
 */
export function refuseOtherCategory(
  registry: ModelRegistry,
  slug: string,
  category: ModelConfig['category'],
  route: string,
): ResolvedModel | undefined {
  const m = registry.get(slug);
  if (m && m.config.category !== category) {
    const article = /^[aeiou]/.test(m.config.category) ? 'an' : 'a';
    throw new GatewayError('invalid_request', `Model ${slug} is ${article} ${m.config.category} model; ${route} serves ${category} models only`);
  }
  return m;
}
