import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CAPABILITIES, SERVER_INFO } from './capabilities';
import { registerPrompts } from './prompts';
import { registerResources } from './resources';
import { availableTools, type Caller, type ToolDeps } from './tools';

/**
 * The SDK's server for one request of one caller: tool registration, argument validation, outputSchema checks,
 * resources and prompts are the SDK's; everything it needs about the caller is closed over here, so nothing of a
 * session lives in memory between requests. Cheap to build: a dozen registrations.
 */
export function buildServer(caller: Caller, deps: ToolDeps): McpServer {
  const server = new McpServer(SERVER_INFO, {
    // As initialize announced (routes.ts): with `logging`, the SDK answers logging/setLevel.
    capabilities: CAPABILITIES,
  });
  for (const tool of availableTools()) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, outputSchema: tool.output },
      // biome-ignore lint/suspicious/noExplicitAny: the SDK types the callback by the schema; ToolDef already did
      ((args: any, extra: { signal: AbortSignal }) => tool.run(args, { caller, deps, signal: extra.signal })) as any,
    );
  }
  registerResources(server, caller, deps);
  registerPrompts(server);
  return server;
}
