import { z } from 'zod';
import { fromRoute } from './result';
import { open } from './shapes';
import { defineTool } from './tool';

/** GET /v1/credits: the account's balance, what is held by calls in flight, and what is available. */
export const getCredits = defineTool({
  name: 'get_credits',
  title: 'Get credits',
  description: "The account's balance in USD: total credits, total usage, balance, held by calls in flight, and available (balance minus held).",
  routes: ['/v1/credits'],
  input: z.object({}),
  output: open({ total_credits: z.number(), total_usage: z.number(), balance: z.number(), held: z.number(), available: z.number() }),
  async run(_args, { caller, deps, signal }) {
    return fromRoute(await deps.edge.call(caller.key, '/v1/credits', { signal }), (body: { data: Record<string, unknown> }) => body.data);
  },
});
