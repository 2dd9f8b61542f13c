import { parseRate } from '@gateway/money';
import { z } from 'zod';

const providerIds = (field: string) =>
  z
    .array(z.string().min(1, `${field}: a provider id cannot be empty`).max(128), `${field} must be an array of provider ids`)
    .max(64, `${field}: at most 64 provider ids`);

/**
 * A price ceiling in the listing's units (USD per token, per request, per image): a decimal string, or a JSON
 * number read by its shortest decimal form (never its binary value) when it is compared.
 */
const ceiling = z.union(
  [
    z.string().regex(/^\d+(\.\d{1,18})?$/, 'must be a decimal USD amount such as "0.000002"'),
    z
      .number()
      .nonnegative()
      .finite()
      .refine((n) => exactRate(n), 'must have at most 18 decimals'),
  ],
  'must be a USD amount (a number or a decimal string)',
);

/**
 * The `provider` object of a paid request (OpenRouter's provider routing, over this gateway's endpoints). Strict:
 * an OpenRouter field the gateway does not honour (data_collection, quantizations...) is refused rather than
 * silently ignored, so a client never believes a preference was applied when it was not.
 */
export const providerPreferencesSchema = z.strictObject(
  {
    /** Provider ids tried first, in this order; the other allowed ones follow unless allow_fallbacks is false. */
    order: providerIds('provider.order').optional(),
    /** Only these providers may serve the call. */
    only: providerIds('provider.only').min(1, 'provider.only: name at least one provider').optional(),
    /** These providers never serve the call. */
    ignore: providerIds('provider.ignore').optional(),
    /** false: one attempt, on the first allowed endpoint; its failure is the answer. Default true. */
    allow_fallbacks: z.boolean().optional(),
    /** Orders the endpoints by this process's recent figures instead of the operator's routing. */
    sort: z.enum(['latency', 'throughput']).optional(),
    /** A model priced above any of these (listing units) is refused before anything is held. */
    max_price: z
      .strictObject({ prompt: ceiling.optional(), completion: ceiling.optional(), request: ceiling.optional(), image: ceiling.optional() })
      .optional(),
  },
  { error: (issue) => (issue.code === 'invalid_type' ? 'provider must be an object' : undefined) },
);

export type ProviderPreferences = z.infer<typeof providerPreferencesSchema>;

function exactRate(n: number): boolean {
  try {
    parseRate(n);
    return true;
  } catch {
    return false;
  }
}
