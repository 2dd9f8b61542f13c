import { spendControlFields } from '@gateway/config';
import { z } from 'zod';

/** The contract's ceiling on documents per request. */
export const MAX_DOCUMENTS = 1000;

/**
 * POST /v1/rerank. A document is a string or an object with a `text` field (other fields of it are ignored).
 * Empty documents are allowed: a blank field in a caller's data set just ranks last. Unknown body fields are dropped.
 */
export const rerankBody = z.object({
  model: z.string().min(1),
  query: z.string().min(1, 'must not be empty'),
  documents: z
    .array(z.union([z.string(), z.looseObject({ text: z.string() })], 'each document must be a string or an object with a string `text`'))
    .min(1, 'at least one document is required')
    .max(MAX_DOCUMENTS, `at most ${MAX_DOCUMENTS} documents`),
  top_n: z.number().int().min(1).optional(),
  return_documents: z.boolean().default(false),
  /** Additions: OpenRouter's provider preferences and the cost cap max_cost; never forwarded. */
  ...spendControlFields,
});

export type RerankBody = z.infer<typeof rerankBody>;

export function documentTexts(documents: RerankBody['documents']): string[] {
  return documents.map((d) => (typeof d === 'string' ? d : d.text));
}
