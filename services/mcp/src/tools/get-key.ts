import { z } from 'zod';
import { fromRoute } from './result';
import { open } from './shapes';
import { defineTool } from './tool';

/** GET /v1/key: the key this session calls with (label, spend cap, usage, rate limit). */
export const getKey = defineTool({
  name: 'get_key',
  title: 'Get the API key record',
  description: 'The API key in use: label, spend limit and what is left of it, lifetime usage, rate limit, expiry.',
  routes: ['/v1/key'],
  input: z.object({}),
  output: open({ key_id: z.string(), account_id: z.string(), label: z.string(), usage: z.number(), limit: z.number().nullable() }),
  async run(_args, { caller, deps, signal }) {
    return fromRoute(await deps.edge.call(caller.key, '/v1/key', { signal }), (body: { data: Record<string, unknown> }) => body.data);
  },
});
