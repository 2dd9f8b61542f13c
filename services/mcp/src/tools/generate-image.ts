import { z } from 'zod';
import { fromRoute } from './result';
import { modelSlug } from './shapes';
import { defineTool } from './tool';

/** POST /v1/images/generations: held at n × the rate, charged for the images made; URLs under /v1/files. */
export const generateImage = defineTool({
  name: 'generate_image',
  title: 'Generate images',
  description:
    'Generates 1 to 10 images from a prompt. Returns gateway URLs (/v1/files/..., fetched with the same API key, valid for minutes), the charge (USD) and the generation_id. Can take up to a minute.',
  routes: ['/v1/images/generations'],
  input: z.object({
    model: modelSlug,
    prompt: z.string().min(1).max(32_000),
    n: z.number().int().min(1).max(10).optional(),
    size: z.string().max(64).optional().describe('e.g. 1024x1024, 16:9 or 1K'),
    aspect_ratio: z.string().max(64).optional(),
    resolution: z.string().max(64).optional().describe('1K, 2K, 4K or WxH; the field image rates are keyed on'),
  }),
  output: z.object({
    model: z.string(),
    images: z.array(z.object({ url: z.string() })),
    cost: z.string().nullable(),
    generation_id: z.string().nullable(),
  }),
  async run(args, { caller, deps, signal }) {
    const answer = await deps.edge.call(caller.key, '/v1/images/generations', { method: 'POST', body: args, signal });
    return fromRoute(answer, (body) => ({
      model: body.model,
      images: (body.data ?? []).map((d: { url: string }) => ({ url: d.url })),
      cost: answer.headers.get('x-gateway-cost'),
      generation_id: answer.requestId,
    }));
  },
});
