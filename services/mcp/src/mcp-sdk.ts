import type * as Parts from './mcp-sdk-parts';

/**
 * What answers a POST /v1/mcp with the MCP SDK, loaded by the first one. Loading the SDK (its modules and the zod
 * schemas it builds) took about 70 ms of every start and 3 MiB of the serving thread's heap (26.2 -> 23.3 MiB live
 * in a heap snapshot of an idle gateway; docs/benchmarks.md, 2026-11-28 20:00-21:00), which a gateway never called
 * over MCP does without; the first call pays those 70 ms. A require() at first use rather than import(): the bundle
 * (scripts/build.js) keeps the module inside with its start deferred, and jest loads it into the same module registry
 * as the rest (an import() would load it a second time, as ESM).
 */
let parts: typeof Parts | undefined;
export const mcpSdk = (): typeof Parts => {
  parts ??= require('./mcp-sdk-parts') as typeof Parts;
  return parts;
};
