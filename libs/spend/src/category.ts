import type { ModelConfig, ModelRegistry, ResolvedModel } from '@gateway/config';
import { GatewayError } from '@gateway/errors';

/**
 * The contract wants a model of another category refused as the client's mistake (400) before any hold, where
 * PaidCall alone would answer 409. A slug that does not exist is left to PaidCall: 409, as on every sync route.
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
    throw new GatewayError('invalid_request', `Model ${slug} is a ${m.config.category} model; ${route} serves ${category} models only`);
  }
  return m;
}
