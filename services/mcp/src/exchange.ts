import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { RPC, rpcError } from './json-rpc';
import { OneShotTransport } from './one-shot-transport';
import { buildServer } from './server';
import type { Caller, ToolDeps } from './tools';

/** One request through a fresh SDK server bound to this caller; its response, or an internal error. */
export async function exchange(request: JSONRPCRequest, caller: Caller, deps: ToolDeps, clientGone: AbortSignal): Promise<object> {
  const server = buildServer(caller, deps);
  const transport = new OneShotTransport();
  await server.connect(transport);
  // Closing the server aborts the handler's signal, which the tools pass to their gateway calls.
  const abandon = () => void server.close();
  clientGone.addEventListener('abort', abandon);
  try {
    return await transport.exchange(request);
  } catch (e) {
    return rpcError(request.id, RPC.internal, (e as Error).message);
  } finally {
    clientGone.removeEventListener('abort', abandon);
    await server.close();
  }
}
