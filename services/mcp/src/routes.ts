import express, { type Request, type Router } from 'express';
import { GatewayError } from '@gateway/errors';
import { INTERNAL, checkJsonBody, clientGone, contextOf } from '@gateway/service-kit';
import {
  type InitializeRequest,
  isInitializeRequest,
  isJSONRPCRequest,
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type JSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { firstId, RPC, rpcError, sessionError } from './json-rpc';
import { OneShotTransport } from './one-shot-transport';
import { headerVersionOk, negotiate, PROTOCOL_VERSIONS } from './protocol-version';
import { CAPABILITIES } from './capabilities';
import { buildServer, SERVER_INFO } from './server';
import type { SessionStore } from './sessions';
import { runStream, type StreamOptions } from './stream/sse';
import type { Notifier } from './stream/notifier';
import type { Caller, ToolDeps } from './tools';

export const MCP_PATH = ['/v1/mcp', '/v1/mcp/'];

export interface RouteDeps extends ToolDeps {
  sessions: SessionStore;
  notifier: Notifier;
  /** Aborts when the service drains: open streams end so the drain need not wait for them. */
  draining: AbortSignal;
}

const header = (req: Request, name: string): string | undefined => {
  const v = req.headers[name];
  return typeof v === 'string' && v.length > 0 ? v : undefined;
};

/** The caller's key, which the edge hands only to this service (INTERNAL.apiKey) after verifying it. */
function callerKey(req: Request): string {
  const key = header(req, INTERNAL.apiKey);
  if (!key) throw new GatewayError('invalid_api_key', "Missing API key: the MCP service spends with the caller's key, which the edge forwards");
  return key;
}

/** The body as JSON-RPC messages; anything else is the transport's error, answered over HTTP (400 envelope). */
function messagesOf(raw: unknown): { messages: JSONRPCMessage[]; batch: boolean } {
  const text = Buffer.isBuffer(raw) ? raw.toString('utf8') : '';
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new GatewayError('invalid_request', 'The body is not JSON: POST /v1/mcp takes one JSON-RPC 2.0 message (or a batch of them)');
  }
  const batch = Array.isArray(parsed);
  const list = batch ? (parsed as unknown[]) : [parsed];
  if (list.length === 0) throw new GatewayError('invalid_request', 'An empty batch: send at least one JSON-RPC message');
  const messages = list.map((m, i) => {
    const r = JSONRPCMessageSchema.safeParse(m);
    if (!r.success)
      throw new GatewayError('invalid_request', `${batch ? `Message ${i}` : 'The body'} is not a JSON-RPC 2.0 message (jsonrpc "2.0", method, id)`);
    return r.data;
  });
  return { messages, batch };
}

export function mountMcp(router: Router, deps: RouteDeps, opts: { maxRequestBody: string; stream: StreamOptions }): void {
  // The raw body: a body that is not JSON is ours to answer (400), not the JSON parser's.
  router.post(MCP_PATH, express.raw({ type: () => true, limit: opts.maxRequestBody, verify: checkJsonBody }), async (req, res) => {
    const ctx = contextOf(req);
    const key = callerKey(req);
    const versionHeader = header(req, 'mcp-protocol-version');
    if (!headerVersionOk(versionHeader)) {
      throw new GatewayError(
        'invalid_request',
        `Unsupported MCP-Protocol-Version ${versionHeader}: this endpoint speaks ${PROTOCOL_VERSIONS.join(' and ')}`,
      );
    }
    const { messages, batch } = messagesOf(req.body);

    const init = messages.find((m) => isInitializeRequest(m)) as (InitializeRequest & { id: string | number }) | undefined;
    if (init) {
      if (messages.length > 1) throw new GatewayError('invalid_request', 'initialize must be sent alone, not in a batch');
      const version = negotiate(init.params.protocolVersion, versionHeader);
      const session = await deps.sessions.open(ctx.accountId, ctx.keyId, version, init.params.clientInfo);
      res.setHeader('mcp-session-id', session.id);
      res.json({ jsonrpc: '2.0', id: init.id, result: { protocolVersion: version, capabilities: CAPABILITIES, serverInfo: SERVER_INFO } });
      return;
    }

    const sessionId = header(req, 'mcp-session-id');
    if (!sessionId) return sessionError(res, 400, firstId(messages), 'Mcp-Session-Id header is required: send initialize first');
    const session = await deps.sessions.find(sessionId, ctx.accountId);
    if (!session) return sessionError(res, 404, firstId(messages), 'Unknown or ended MCP session: initialize a new one');

    const requests = messages.filter((m): m is JSONRPCRequest => isJSONRPCRequest(m));
    // Notifications (initialized, cancelled) and responses need no answer, and the spec's is 202 with no body.
    if (requests.length === 0) return void res.status(202).end();

    const caller: Caller = { key, accountId: ctx.accountId, keyId: ctx.keyId, sessionId: session.id };
    // A client that leaves stops its tool calls: the gateway calls they made are abandoned as any client's would be.
    const gone = clientGone(res);
    try {
      const answers = await Promise.all(requests.map((r) => exchange(r, caller, deps, gone.signal)));
      res.json(batch ? answers : answers[0]);
    } finally {
      gone.release();
    }
  });

  router.get(MCP_PATH, async (req, res) => {
    const ctx = contextOf(req);
    const sessionId = header(req, 'mcp-session-id');
    if (!sessionId) return sessionError(res, 400, null, 'Mcp-Session-Id header is required to open the session stream');
    const session = await deps.sessions.find(sessionId, ctx.accountId);
    if (!session) return sessionError(res, 404, null, 'Unknown or ended MCP session: initialize a new one');
    await runStream(req, res, session, deps, opts.stream);
  });

  router.delete(MCP_PATH, async (req, res) => {
    const ctx = contextOf(req);
    const sessionId = header(req, 'mcp-session-id');
    if (!sessionId) return sessionError(res, 400, null, 'Mcp-Session-Id header is required to end a session');
    if (!(await deps.sessions.end(sessionId, ctx.accountId))) return sessionError(res, 404, null, 'Unknown or ended MCP session');
    // This process's stream of the session ends now; one on another replica at its next poll.
    deps.notifier.wake(sessionId);
    res.status(204).end();
  });
}

/** One request through a fresh SDK server bound to this caller; its response, or an internal error. */
async function exchange(request: JSONRPCRequest, caller: Caller, deps: ToolDeps, clientGone: AbortSignal): Promise<object> {
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
