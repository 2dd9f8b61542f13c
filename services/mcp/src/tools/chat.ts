import { z } from 'zod';
import { fromRoute } from './result';
import { modelSlug } from './shapes';
import { defineTool } from './tool';

const message = z.object({ role: z.enum(['system', 'user', 'assistant']), content: z.string() });

/** POST /v1/chat/completions, not streamed: the same hold, settle and usage record as any HTTP client's call. */
export const chat = defineTool({
  name: 'chat',
  title: 'Chat completion',
  description:
    'Runs one chat completion on a text model and returns the reply, the token usage, the exact cost (USD) and the generation_id for get_generation. Worst case is held before the call (see quote).',
  routes: ['/v1/chat/completions'],
  input: z.object({
    model: modelSlug,
    messages: z.array(message).min(1).describe('The conversation, oldest first'),
    max_tokens: z.number().int().positive().optional().describe('Caps the reply, and so the worst case held'),
    temperature: z.number().min(0).max(2).optional(),
  }),
  output: z.object({
    id: z.string(),
    model: z.string(),
    content: z.string().nullable(),
    finish_reason: z.string().nullable(),
    usage: z.looseObject({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number(), cost: z.string().optional() }),
    generation_id: z.string().nullable(),
  }),
  async run(args, { caller, deps, signal }) {
    const answer = await deps.edge.call(caller.key, '/v1/chat/completions', { method: 'POST', body: { ...args, stream: false }, signal });
    return fromRoute(answer, (body) => ({
      id: body.id,
      model: body.model,
      content: body.choices?.[0]?.message?.content ?? null,
      finish_reason: body.choices?.[0]?.finish_reason ?? null,
      usage: body.usage,
      generation_id: answer.requestId,
    }));
  },
});
