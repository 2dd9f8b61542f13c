import { spendControlFields } from '@gateway/config';
import { z } from 'zod';
import { outputLimitFields } from '../output-cap';

const message = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool']),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string() })), z.null()]).optional(),
});

/** POST /v1/chat/completions. Unknown fields pass through to the upstream, as the spec requires. */
export const chatCompletionBody = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1, 'at least one message is required'),
  stream: z.boolean().optional(),
  ...outputLimitFields,
  // Sampling parameters pass through unchanged: the contract bounds them on /v1/responses only, and each
  // upstream knows its own range. `n` multiplies the worst case of the hold.
  temperature: z.number().optional(),
  top_p: z.number().optional(),
  n: z.number().int().positive().optional(),
  models: z.array(z.string().min(1)).max(10).optional(),
  ...spendControlFields,
});

export type ChatCompletionBody = z.infer<typeof chatCompletionBody>;

/** Gateway-only fields never reach the upstream. */
export function upstreamBody(body: ChatCompletionBody): Record<string, unknown> & Pick<ChatCompletionBody, 'messages'> {
  const { models: _models, provider: _provider, max_cost: _maxCost, ...rest } = body;
  return rest;
}
