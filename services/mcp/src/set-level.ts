import { type JSONRPCRequest, SetLevelRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { RPC, rpcError } from './json-rpc';
import { LOG_LEVELS, logRank } from './log-level';
import type { SessionStore } from './sessions';

/**
 * logging/setLevel, answered here rather than by the SDK server: that server lives for one request (server.ts), so
 * the level it would keep in memory would be forgotten at once. The session's row keeps it, and the notifier
 * queues nothing below it (notifier.ts).
 */
export async function setLevel(request: JSONRPCRequest, sessionId: string, sessions: SessionStore): Promise<object> {
  const r = SetLevelRequestSchema.safeParse(request);
  if (!r.success) return rpcError(request.id, RPC.invalidParams, `logging/setLevel takes params.level, one of ${LOG_LEVELS.join(', ')}`);
  await sessions.setLogRank(sessionId, logRank(r.data.params.level));
  return { jsonrpc: '2.0', id: request.id, result: {} };
}
