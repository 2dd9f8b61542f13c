import { spendControlFields } from '@gateway/config';
import { z } from 'zod';

/*
 * POST /v1/messages, the message API's request shape. Block and tool objects are loose so that annotations the
 * gateway cannot act on (cache_control, citations) do not break a request; unknown top-level fields are dropped:
 * the body is translated onto a chat call, so there is nowhere to forward them.
 */

const textBlock = z.looseObject({ type: z.literal('text'), text: z.string() });

const imageBlock = z.looseObject({
  type: z.literal('image'),
  source: z.discriminatedUnion('type', [
    z.looseObject({ type: z.literal('base64'), media_type: z.string().min(1), data: z.string().min(1) }),
    z.looseObject({ type: z.literal('url'), url: z.url() }),
  ]),
});

const toolUseBlock = z.looseObject({
  type: z.literal('tool_use'),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
});

const toolResultBlock = z.looseObject({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1),
  // Chat upstreams take text only in a tool answer.
  content: z.union([z.string(), z.array(textBlock)]).optional(),
  is_error: z.boolean().optional(),
});

const userMessage = z.object({
  role: z.literal('user'),
  content: z.union([z.string(), z.array(z.discriminatedUnion('type', [textBlock, imageBlock, toolResultBlock])).min(1)]),
});

const assistantMessage = z.object({
  role: z.literal('assistant'),
  content: z.union([z.string(), z.array(z.discriminatedUnion('type', [textBlock, toolUseBlock])).min(1)]),
});

const message = z.discriminatedUnion('role', [userMessage, assistantMessage], {
  error: 'role must be "user" or "assistant" (system text goes in the top-level "system" field)',
});

const tool = z.looseObject({
  // Only client tools: server tools (web search...) exist at one provider only.
  type: z.literal('custom').optional(),
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, "_" or "-"'),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal('object') }),
});

const parallel = { disable_parallel_tool_use: z.boolean().optional() };
const toolChoice = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto'), ...parallel }),
  z.object({ type: z.literal('any'), ...parallel }),
  z.object({ type: z.literal('tool'), name: z.string().min(1), ...parallel }),
  z.object({ type: z.literal('none') }),
]);

export const messagesBody = z.object({
  model: z.string().min(1),
  messages: z.array(message).min(1, 'at least one message is required'),
  max_tokens: z.number().int().min(1),
  system: z.union([z.string(), z.array(textBlock)]).optional(),
  stop_sequences: z.array(z.string().min(1)).optional(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  metadata: z.strictObject({ user_id: z.string().max(256).nullable().optional() }).optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  /** Additions: OpenRouter's provider preferences (route-plan.ts in @gateway/spend) and max_cost (cost-cap.ts). */
  ...spendControlFields,
});

export type MessagesBody = z.infer<typeof messagesBody>;
