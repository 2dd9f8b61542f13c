import { z } from 'zod';
import { fromRoute } from './result';
import { open } from './shapes';
import { defineTool } from './tool';

/** GET /v1/generation?id=: what one request cost and did (tokens, latency, status). */
export const getGeneration = defineTool({
  name: 'get_generation',
  title: 'Get a generation record',
  description:
    'What one request did and cost: model, tokens, total_cost (USD), latency, status. The id is the generation_id a chat or generate_image result carries (X-Gateway-Request-Id over HTTP).',
  routes: ['/v1/generation'],
  input: z.object({
    id: z
      .string()
      .regex(/^req_[a-z0-9]+$/, 'a request id, req_<id>')
      .describe('The request id, req_<id>'),
  }),
  output: open({ id: z.string(), model: z.string(), total_cost: z.number(), status: z.string() }),
  async run(args, { caller, deps, signal }) {
    const answer = await deps.edge.call(caller.key, `/v1/generation?id=${encodeURIComponent(args.id)}`, { signal });
    return fromRoute(answer, (body: { data: Record<string, unknown> }) => body.data);
  },
});
