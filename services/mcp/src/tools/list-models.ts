import { z } from 'zod';
import { fromRoute } from './result';
import { open } from './shapes';
import { defineTool } from './tool';

const CATEGORIES = ['text', 'image', 'video', 'audio', 'embedding', 'rerank'] as const;

const listingItem = open({
  id: z.string(),
  name: z.string(),
  category: z.string(),
  status: z.string(),
  unit: z.string(),
  price: z.number(),
});

/** GET /v1/models, filtered here by category (the route lists every model). */
export const listModels = defineTool({
  name: 'list_models',
  title: 'List models',
  description:
    'Lists the models this gateway serves with their category, status (available or coming_soon), unit and headline price. Optionally only one category.',
  routes: ['/v1/models'],
  input: z.object({ category: z.enum(CATEGORIES).optional().describe('Only models of this category') }),
  output: z.object({ models: z.array(listingItem), count: z.number().int() }),
  async run(args, { caller, deps, signal }) {
    const answer = await deps.edge.call(caller.key, '/v1/models', { signal });
    return fromRoute(answer, (body: { data: Array<{ category: string }> }) => {
      const models = body.data.filter((m) => args.category === undefined || m.category === args.category);
      return { models, count: models.length };
    });
  },
});
