import { z } from 'zod';
import { rateLimitSchema } from '@gateway/config';

/** Money in admin bodies is a JSON number (or decimal string) of USD, read exactly by @gateway/money. */
const usdAmount = z.union([z.number().finite(), z.string().regex(/^-?\d+(\.\d{1,9})?$/)]);

export const createAccountBody = z.strictObject({
  credits: usdAmount.refine((v) => Number(v) >= 0, 'must not be negative').optional(),
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
  limit: usdAmount
    .refine((v) => Number(v) >= 0, 'must not be negative')
    .nullable()
    .optional(),
  expires_at: z.iso.datetime({ offset: true }).nullable().optional(),
});
