import type { ResolvedModel } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import { formatUsd } from '@gateway/money';
import type { PlannedModel } from './route-plan';

interface CapSpec {
  maxCostNano?: bigint;
  worstCase(model: ResolvedModel): bigint;
  leastCost?(model: ResolvedModel): bigint;
}

/**
 * The planned models a client's `max_cost` leaves: those whose least charge fits under it (each model has its own
 * prices, so a fallback may fit where the first model does not). None left is 402 insufficient_credits naming the
 * cap and the least the call can cost, before anything is held or sent: the client asked for a call dearer than it
 * will pay for, which more credit would not change, but a higher cap would.
 */
export function affordablePlan(plan: PlannedModel[], spec: CapSpec): PlannedModel[] {
  const cap = spec.maxCostNano;
  if (cap === undefined) return plan;
  const least = (m: ResolvedModel) => (spec.leastCost ? spec.leastCost(m) : spec.worstCase(m));
  const left = plan.filter((p) => least(p.model) <= cap);
  if (left.length > 0) return left;
  let cheapest = plan[0];
  for (const p of plan) if (least(p.model) < least(cheapest.model)) cheapest = p;
  throw new GatewayError(
    'insufficient_credits',
    `max_cost is ${formatUsd(cap)} USD, below the least this call can cost: ${formatUsd(least(cheapest.model))} USD on ${cheapest.model.config.id}; nothing was held or charged`,
  );
}
