import { type McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import type { Caller, ToolDeps } from './tools';

const CATALOG_URI = 'gateway://catalog';

/** A route's JSON body as the resource's text; a failed route is a JSON-RPC error naming the gateway's code. */
async function read(caller: Caller, deps: ToolDeps, uri: string, path: string): Promise<ReadResourceResult> {
  const answer = await deps.edge.call(caller.key, path);
  if (answer.status !== 200) {
    const code = (answer.body as { error?: { code?: string } } | undefined)?.error?.code ?? 'upstream_unavailable';
    throw new Error(`${path} answered ${answer.status} ${code}`);
  }
  return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(answer.body, null, 2) }] };
}

/** The public catalogue (GET /v1/catalog) and each model's card (GET /v1/model/{author}/{slug}). */
export function registerResources(server: McpServer, caller: Caller, deps: ToolDeps): void {
  server.registerResource(
    'catalog',
    CATALOG_URI,
    {
      title: 'Model catalogue',
      description: 'Every model with its category, price, speed and capabilities (GET /v1/catalog)',
      mimeType: 'application/json',
    },
    (uri) => read(caller, deps, uri.href, '/v1/catalog'),
  );
  server.registerResource(
    'model',
    new ResourceTemplate('gateway://model/{author}/{slug}', {
      list: async () => {
        const answer = await deps.edge.call(caller.key, '/v1/models');
        const models = answer.status === 200 ? (answer.body as { data: Array<{ id: string; name: string }> }).data : [];
        return {
          resources: models.map((m) => ({ uri: `gateway://model/${m.id}`, name: m.id, title: m.name, mimeType: 'application/json' })),
        };
      },
    }),
    {
      title: 'Model card',
      description: "One model's record: pricing, architecture, parameters (GET /v1/model/{author}/{slug})",
      mimeType: 'application/json',
    },
    (uri, vars) => read(caller, deps, uri.href, `/v1/model/${encodeURIComponent(String(vars.author))}/${encodeURIComponent(String(vars.slug))}`),
  );
}
