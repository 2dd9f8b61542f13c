import { spendControlFields } from '@gateway/config';
import { z } from 'zod';

/** OpenAI's own ceiling on inputs per request: a request we accept is never refused upstream for its length. */
export const MAX_INPUTS = 2048;

const text = z.string().min(1, 'must not be empty');
const tokenId = z.number().int().nonnegative();
const tokens = z.array(tokenId).min(1, 'a token array must not be empty');

/**
 * POST /v1/embeddings. Unknown fields are dropped, not forwarded: the upstream request is a fixed shape that every
 * provider kind can translate.
 */
export const embeddingsBody = z.object({
  model: z.string().min(1),
  input: z.union(
    [text, z.array(text).min(1).max(MAX_INPUTS), tokens, z.array(tokens).min(1).max(MAX_INPUTS)],
    `must be a non-empty string, an array of non-empty strings, a token array, or an array of token arrays (at most ${MAX_INPUTS} inputs)`,
  ),
  encoding_format: z.enum(['float', 'base64']).default('float'),
  dimensions: z.number().int().positive().optional(),
  user: z.string().optional(),
  /** Additions: OpenRouter's provider preferences and the cost cap max_cost; never forwarded. */
  ...spendControlFields,
});

export type EmbeddingsBody = z.infer<typeof embeddingsBody>;

/** Every input shape as a list, which is what the upstream protocols take. */
export function inputsOf(input: EmbeddingsBody['input']): string[] | number[][] {
  if (typeof input === 'string') return [input];
  if (input.length > 0 && typeof input[0] === 'number') return [input as number[]];
  return input as string[] | number[][];
}
