import express, { type Request, type Router } from 'express';
import { GatewayError } from '@gateway/errors';
import type { RateMeter } from '@gateway/ratelimit';
import { INTERNAL, checkJsonBody, clientGone, contextOf } from '@gateway/service-kit';
import type { InitializeRequest, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { answerBatch, type BatchItem } from './batch';
import { storedClientInfo } from './client-info';
import { firstId, sessionError } from './json-rpc';
import type { McpLimits } from './limits';
import { meterExtra } from './meter-batch';
import { headerVersionOk, negotiate, PROTOCOL_VERSIONS } from './protocol-version';
import { CAPABILITIES, SERVER_INFO } from './capabilities';
import { mcpSdk } from './mcp-sdk';
import type { SessionStore } from './sessions';
import type { StreamHub } from './stream/hub';
import { runStream, type StreamOptions } from './stream/sse';
import type { Caller, ToolDeps } from './tools';

export const MCP_PATH = ['/v1/mcp', '/v1/mcp/'];

export interface RouteDeps extends ToolDeps {
  sessions: SessionStore;
  hub: StreamHub;
  /** The account request meter the edge counts on; each message of a batch past the first is counted here. */
  meter: RateMeter;
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

export function mountMcp(
  router: Router,
  deps: RouteDeps,
  opts: { maxRequestBody: string; stream: StreamOptions; limits: Pick<McpLimits, 'maxBatch' | 'maxBatchAnswerBytes' | 'batchConcurrency'> },
): void {
  const { limits } = opts;
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
    const { messagesOf, isInitializeRequest, isJSONRPCRequest, setLevel, exchange } = mcpSdk();
    const { messages, batch } = messagesOf(req.body, limits.maxBatch);

    const init = messages.find((m) => isInitializeRequest(m)) as (InitializeRequest & { id: string | number }) | undefined;
    if (init) {
      if (messages.length > 1) throw new GatewayError('invalid_request', 'initialize must be sent alone, not in a batch');
      const version = negotiate(init.params.protocolVersion, versionHeader);
      const session = await deps.sessions.open(ctx.accountId, ctx.keyId, version, storedClientInfo(init.params.clientInfo));
      res.setHeader('mcp-session-id', session.id);
      res.json({ jsonrpc: '2.0', id: init.id, result: { protocolVersion: version, capabilities: CAPABILITIES, serverInfo: SERVER_INFO } });
      return;
    }

    const sessionId = header(req, 'mcp-session-id');
    if (!sessionId) return sessionError(res, 400, firstId(messages), 'Mcp-Session-Id header is required: send initialize first');
    const session = await deps.sessions.find(sessionId, ctx.accountId);
    if (!session) return sessionError(res, 404, firstId(messages), 'Unknown or ended MCP session: initialize a new one');

    // The edge counted the POST as the first message; every other one is counted as if sent alone.
    const metered = await meterExtra(deps.meter, req, res, ctx.accountId, messages.length - 1);
    const items: BatchItem[] = [];
    messages.forEach((m, i) => {
      if (isJSONRPCRequest(m)) items.push({ request: m, meter: i === 0 ? undefined : metered[i - 1] });
    });
    // Notifications (initialized, cancelled) and responses need no answer, and the spec's is 202 with no body.
    if (items.length === 0) return void res.status(202).end();

    const caller: Caller = { key, accountId: ctx.accountId, keyId: ctx.keyId, sessionId: session.id };
    // A client that leaves stops its tool calls: the gateway calls they made are abandoned as any client's would be.
    const gone = clientGone(res);
    try {
      const run = (r: JSONRPCRequest) =>
        r.method === 'logging/setLevel' ? setLevel(r, session.id, deps.sessions) : exchange(r, caller, deps, gone.signal);
      const answers = await answerBatch(items, run, { concurrency: limits.batchConcurrency, maxAnswerBytes: limits.maxBatchAnswerBytes });
      res.type('application/json').send(batch ? `[${answers.join(',')}]` : answers[0]);
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
    // This process's streams of the session end now; one on another replica at its process's next poll.
    deps.hub.end(sessionId);
    res.status(204).end();
  });
}
