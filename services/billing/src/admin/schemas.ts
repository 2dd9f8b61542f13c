import { z } from 'zod';
import { rateLimitSchema } from '@gateway/config';
import { parseUsd } from '@gateway/money';
import { cursorParam, limitParam, queryText } from '../paging';

/**
 * Money in admin bodies is a JSON number or a decimal string of USD, read here once into exact nano-USD by
 * @gateway/money: an amount it cannot read exactly (finer than a nano-dollar, 1e-10 included) is a 400, never
 * rounded.
 */
const usdAmount = z.union([z.number().finite(), z.string().max(64)]).transform((v, ctx) => {
  try {
    return parseUsd(v);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: `not an exact USD amount in nano-dollars: ${(e as Error).message}` });
    return z.NEVER;
  }
});
const notNegative = (nano: bigint) => nano >= 0n;

export const createAccountBody = z.strictObject({
  credits: usdAmount.refine(notNegative, 'must not be negative').optional(),
  rate_limit: rateLimitSchema.optional(),
  job_concurrency: z.number().int().positive().optional(),
});

export const patchAccountBody = z.strictObject({
  rate_limit: rateLimitSchema.optional(),
  job_concurrency: z.number().int().positive().optional(),
  suspended: z.boolean().optional(),
});

export const creditsBody = z.strictObject({ amount: usdAmount });

export const createKeyBody = z.strictObject({
  label: z.string().max(200).optional(),
  limit: usdAmount.refine(notNegative, 'must not be negative').nullable().optional(),
  expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
});

/** GET /admin/v1/accounts: paged as GET /v1/jobs; an empty `search` (a console's empty box) is none. */
export const listAccountsQuery = z
  .object({
    search: queryText(200)
      .transform((s) => s.trim() || undefined)
      .optional(),
    limit: limitParam,
    cursor: cursorParam.optional(),
  })
  .passthrough();
