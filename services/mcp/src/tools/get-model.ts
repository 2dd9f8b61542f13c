import { z } from 'zod';
import { fromRoute } from './result';
import { modelSlug, open } from './shapes';
import { defineTool } from './tool';

/** GET /v1/model/{author}/{slug}: the single-model record (pricing, architecture, supported parameters). */
export const getModel = defineTool({
  name: 'get_model',
  title: 'Get a model',
  description: "One model's full record: pricing per unit, context length, architecture (input and output modalities), supported parameters.",
  routes: ['/v1/model/author/slug'],
  input: z.object({ model: modelSlug }),
  output: z.object({ model: open({ id: z.string(), category: z.string(), status: z.string() }) }),
  async run(args, { caller, deps, signal }) {
    const [author, slug] = args.model.split('/');
    const answer = await deps.edge.call(caller.key, `/v1/model/${encodeURIComponent(author)}/${encodeURIComponent(slug)}`, { signal });
    return fromRoute(answer, (body: { data: unknown }) => ({ model: body.data }));
  },
});
