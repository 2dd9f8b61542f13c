import { characterCount } from '@gateway/pricing';
import { spendControlFields } from '@gateway/config';
import { z } from 'zod';

/**
 * The contract's bound on `input`, which is also what a request is billed on: counted in characters as the bill
 * counts them (characterCount, Unicode code points).
 */
export const MAX_INPUT_CHARACTERS = 4096;

const input = z
  .string()
  .min(1, 'must not be empty')
  // Every code point is one or two UTF-16 units: past twice the bound there is no need to count.
  .refine(
    (s) => s.length <= 2 * MAX_INPUT_CHARACTERS && characterCount(s) <= MAX_INPUT_CHARACTERS,
    `must be at most ${MAX_INPUT_CHARACTERS} characters`,
  );

/**
 * POST /v1/audio/speech. `voice` is free text (providers name their own voices; the upstream refuses an unknown
 * one as the client's mistake). Unknown fields are dropped, not forwarded: every provider kind takes this fixed shape.
 */
export const speechBody = z.object({
  model: z.string().min(1),
  input,
  voice: z.string().min(1, 'must not be empty').default('alloy'),
  response_format: z.enum(['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm']).default('mp3'),
  speed: z.number().min(0.25).max(4).default(1),
  /** Additions: OpenRouter's provider preferences and the cost cap max_cost; never forwarded. */
  ...spendControlFields,
});

export type SpeechBody = z.infer<typeof speechBody>;
