import { parseUsd } from '@gateway/money';
import { z } from 'zod';
import { providerPreferencesSchema } from './provider-preferences';

/** Past this a cap names no amount any one call could cost, and only feeds the ledger figures no account holds. */
const MAX_COST_CEILING_NANO = 1_000_000n * 1_000_000_000n;
const TOO_LARGE = 'must be at most 1000000 USD';

const SHAPE = 'must be a positive USD amount, as a number or a decimal string such as "0.05"';

/**
 * The request's cost cap in nano-USD: the amount read exactly (a JSON number by its shortest decimal form, never
 * its binary value; a string as written, which is what a multipart form sends), or why it cannot be one.
 */
function nanoOf(value: string | number): bigint | string {
  if (typeof value === 'string' && !/^\s*\d+(\.\d+)?\s*$/.test(value)) return SHAPE;
  // Compared, not computed with: 1e300 has an exponent no amount parses from.
  if (typeof value === 'number' && value > 1_000_000) return TOO_LARGE;
  let nano: bigint;
  try {
    nano = parseUsd(value);
  } catch {
    // A finer amount than the ledger's unit would be rounded by someone; the client must say what it means.
    return 'must be a USD amount with at most 9 decimals (the ledger counts nano-USD)';
  }
  if (nano <= 0n) return 'must be above 0 (omit max_cost for no cap)';
  if (nano > MAX_COST_CEILING_NANO) return TOO_LARGE;
  return nano;
}

/**
 * `max_cost`: the most, in USD, the client will pay for this call, whatever the upstream does. Parsed once, here,
 * to integer nano-USD; @gateway/spend's PaidCall enforces it (the hold, the refusal, the output limit).
 */
export const maxCostSchema = z.union([z.number(), z.string()], SHAPE).transform((value, ctx) => {
  // NaN and the infinities cannot come in JSON, but a body built in code can carry them.
  if (typeof value === 'number' && !Number.isFinite(value)) {
    ctx.addIssue({ code: 'custom', message: SHAPE });
    return z.NEVER;
  }
  const nano = nanoOf(value);
  if (typeof nano === 'string') {
    ctx.addIssue({ code: 'custom', message: nano });
    return z.NEVER;
  }
  return nano;
});

/**
 * The fields by which a client steers and bounds what a paid call may spend, the same on every paid route:
 * `provider` (which endpoints, at which prices) and `max_cost` (how much at most). Never forwarded upstream.
 */
export const spendControlFields = {
  provider: providerPreferencesSchema.optional(),
  max_cost: maxCostSchema.optional(),
};
