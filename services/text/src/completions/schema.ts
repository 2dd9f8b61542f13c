import { spendControlFields } from '@gateway/config';
import { z } from 'zod';
import { outputLimitFields } from '../output-cap';

/** POST /v1/completions (legacy text completions). Unknown fields pass through to the upstream, as on chat. */
export const completionBody = z.looseObject({
  model: z.string().min(1),
  prompt: z.union([z.string(), z.array(z.string()).min(1, 'prompt must not be an empty array').max(20, 'at most 20 prompts per request')]),
  // max_completion_tokens is no legacy field, but unknown fields pass through, so it is held to the same rule.
  ...outputLimitFields,
  stream: z.boolean().optional(),
  // Passed through unchanged, as on chat: the upstream knows its own range.
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  // One choice per prompt is how a batch answers (choice i is prompt i), so several choices per prompt cannot be told apart.
  n: z.literal(1, 'only n=1 is supported on /v1/completions (a batch answers one choice per prompt)').optional(),
  models: z.array(z.string().min(1)).max(10).optional(),
  ...spendControlFields,
});

export type CompletionBody = z.infer<typeof completionBody>;

/** Fields of the legacy API with no chat equivalent; refused rather than silently dropped. */
export const UNSUPPORTED = ['suffix', 'echo', 'logprobs', 'best_of'] as const;

/** One prompt as the chat call the upstream receives: wrapped as one user message. */
export function chatBodyFor(body: CompletionBody, prompt: string): Record<string, unknown> & { messages: Array<{ role: string; content: string }> } {
  const { prompt: _p, models: _m, provider: _provider, max_cost: _maxCost, ...rest } = body;
  return { ...rest, messages: [{ role: 'user', content: prompt }] };
}
