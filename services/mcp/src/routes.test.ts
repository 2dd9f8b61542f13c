import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { buildRegistry, parseConfig } from '@gateway/config';
import { errorHandler } from '@gateway/errors';
import { createMemoryMeter } from '@gateway/ratelimit';
import { INTERNAL } from '@gateway/service-kit';
import type { StoredClientInfo } from './client-info';
import type { EdgeClient } from './edge-client';
import { BATCH_LIMITS } from './limits';
import { mountMcp, type RouteDeps } from './routes';
import type { Session, SessionStore } from './sessions';
import type { StreamHub } from './stream/hub';
import type { Notifier } from './stream/notifier';

/**
 * The endpoint's session and batch rules, with the session table in memory: what the contract says about
 * initialize, Mcp-Session-Id and batches, without a database (sessions.itest.ts holds the store itself to its SQL).
 */
class MemorySessions {
  readonly rows = new Map<string, Session & { clientInfo?: StoredClientInfo; rank?: number }>();
  private next = 1;
  async open(accountId: string, keyId: string, protocolVersion: string, clientInfo: StoredClientInfo | undefined) {
    const s = { id: `mcp_${this.next++}`, accountId, keyId, protocolVersion, deliveredSeq: 0, clientInfo };
    this.rows.set(s.id, s);
    return s;
  }
  async find(id: string, accountId: string) {
    const s = this.rows.get(id);
    return s?.accountId === accountId ? s : undefined;
  }
  async end(id: string, accountId: string) {
    return (await this.find(id, accountId)) !== undefined && this.rows.delete(id);
  }
  async setLogRank(id: string, rank: number) {
    const s = this.rows.get(id);
    if (s) s.rank = rank;
  }
}

const registry = buildRegistry(parseConfig({ providers: [{ id: 'sim', kind: 'simulated' }], models: [] }));
let server: http.Server;
let url: string;
const sessions = new MemorySessions();
const ended: string[] = [];

beforeAll(async () => {
  const router = express.Router();
  const deps: RouteDeps = {
    sessions: sessions as unknown as SessionStore,
    hub: { end: (id: string) => ended.push(id) } as unknown as StreamHub,
    meter: createMemoryMeter(),
    draining: new AbortController().signal,
    edge: {} as EdgeClient,
    registry,
    notifier: {} as Notifier,
  };
  mountMcp(router, deps, { maxRequestBody: '1mb', stream: { keepAliveMs: 60_000 }, limits: { ...BATCH_LIMITS, maxBatch: 5 } });
  server = http.createServer(
    express()
      .use(router)
      .use(errorHandler(() => 'req_test')),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/mcp`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const as = (account: string, extra: Record<string, string> = {}) => ({
  [INTERNAL.accountId]: account,
  [INTERNAL.keyId]: `key_${account}`,
  [INTERNAL.apiKey]: `sk_${account}`,
  [INTERNAL.rateLimit]: '1000/3600000',
  ...extra,
});

async function call(method: 'POST' | 'GET' | 'DELETE', headers: Record<string, string>, body?: unknown) {
  const r = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, json: text ? JSON.parse(text) : undefined };
}

const initialize = (protocolVersion = '2025-06-18', clientInfo: unknown = { name: 'test', version: '1' }) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo },
});
const ping = (id: number | string) => ({ jsonrpc: '2.0', id, method: 'ping' });

async function openSession(account: string): Promise<string> {
  const r = await call('POST', as(account), initialize());
  expect(r.status).toBe(200);
  return r.headers.get('mcp-session-id') as string;
}

describe('mcp sessions', () => {
  it('initialize opens a session in the version asked for when spoken here, else the newest, and keeps only the bounded clientInfo', async () => {
    const r = await call('POST', as('acct_a'), initialize('2025-03-26', { name: 'agent', version: '2', junk: 'x' }));
    expect(r.status).toBe(200);
    expect(r.json.result).toMatchObject({ protocolVersion: '2025-03-26', serverInfo: { name: 'model-gateway' } });
    const id = r.headers.get('mcp-session-id') as string;
    expect(sessions.rows.get(id)).toMatchObject({ accountId: 'acct_a', keyId: 'key_acct_a', clientInfo: { name: 'agent', version: '2' } });
    expect(sessions.rows.get(id)?.clientInfo).not.toHaveProperty('junk');

    const newest = await call('POST', as('acct_a'), initialize('1999-01-01'));
    expect(newest.json.result.protocolVersion).toBe('2025-06-18');
    const byHeader = await call('POST', as('acct_a', { 'mcp-protocol-version': '2025-03-26' }), initialize('1999-01-01'));
    expect(byHeader.json.result.protocolVersion).toBe('2025-03-26');
  });

  it('refuses an over-long clientInfo field, and a protocol version header it does not speak, with the envelope (400)', async () => {
    const long = await call('POST', as('acct_a'), initialize('2025-06-18', { name: 'x'.repeat(257), version: '1' }));
    expect(long.status).toBe(400);
    expect(long.json.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('clientInfo.name') });
    const version = await call('POST', as('acct_a', { 'mcp-protocol-version': '2024-01-01' }), ping(1));
    expect(version.status).toBe(400);
    expect(version.json.error.message).toMatch(/Unsupported MCP-Protocol-Version 2024-01-01: this endpoint speaks 2025-06-18 and 2025-03-26/);
  });

  it('answers a call without Mcp-Session-Id 400, and an unknown one or another account’s 404, both as JSON-RPC -32600', async () => {
    const session = await openSession('acct_b');
    const none = await call('POST', as('acct_b'), ping(5));
    expect(none).toMatchObject({ status: 400, json: { jsonrpc: '2.0', id: 5, error: { code: -32600 } } });
    const unknown = await call('POST', as('acct_b', { 'mcp-session-id': 'mcp_nope' }), ping('x'));
    expect(unknown).toMatchObject({ status: 404, json: { id: 'x', error: { code: -32600 } } });
    const theirs = await call('POST', as('acct_other', { 'mcp-session-id': session }), ping(6));
    expect(theirs).toMatchObject({ status: 404, json: { id: 6, error: { code: -32600 } } });
    expect((await call('POST', as('acct_b', { 'mcp-session-id': session }), ping(7))).json).toEqual({ jsonrpc: '2.0', id: 7, result: {} });
    for (const method of ['GET', 'DELETE'] as const) {
      expect(await call(method, as('acct_b'))).toMatchObject({ status: 400, json: { id: null, error: { code: -32600 } } });
      expect(await call(method, as('acct_other', { 'mcp-session-id': session }))).toMatchObject({ status: 404, json: { error: { code: -32600 } } });
    }
  });

  it('DELETE ends the session and its streams here; the session is then unknown', async () => {
    const session = await openSession('acct_c');
    expect((await call('DELETE', as('acct_c', { 'mcp-session-id': session }))).status).toBe(204);
    expect(ended).toContain(session);
    expect((await call('POST', as('acct_c', { 'mcp-session-id': session }), ping(1))).status).toBe(404);
    expect((await call('DELETE', as('acct_c', { 'mcp-session-id': session }))).status).toBe(404);
  });

  it('refuses a call the edge did not forward (no verified key) with the envelope (401)', async () => {
    const { [INTERNAL.apiKey]: _key, ...headers } = as('acct_d');
    expect(await call('POST', headers, initialize())).toMatchObject({ status: 401, json: { error: { code: 'invalid_api_key' } } });
  });
});

describe('mcp JSON-RPC batches', () => {
  let session: string;
  beforeAll(async () => {
    session = await openSession('acct_batch');
  });
  const inSession = (extra: Record<string, string> = {}) => as('acct_batch', { 'mcp-session-id': session, ...extra });

  it('answers a batch with an array in the requests’ order, and a lone request with one object', async () => {
    const r = await call('POST', inSession(), [ping(3), ping('b'), ping(1)]);
    expect(r.status).toBe(200);
    expect(r.json).toEqual([
      { jsonrpc: '2.0', id: 3, result: {} },
      { jsonrpc: '2.0', id: 'b', result: {} },
      { jsonrpc: '2.0', id: 1, result: {} },
    ]);
    expect(Number(r.headers.get('x-ratelimit-remaining'))).toBeLessThan(1000);
    expect((await call('POST', inSession(), [ping(9)])).json).toEqual([{ jsonrpc: '2.0', id: 9, result: {} }]);
  });

  it('answers notifications and responses alone with 202 and no body, and answers only the requests beside them', async () => {
    const note = { jsonrpc: '2.0', method: 'notifications/initialized' };
    expect(await call('POST', inSession(), note)).toMatchObject({ status: 202, json: undefined });
    expect(await call('POST', inSession(), [note, { jsonrpc: '2.0', id: 99, result: {} }])).toMatchObject({ status: 202, json: undefined });
    expect((await call('POST', inSession(), [note, ping(4)])).json).toEqual([{ jsonrpc: '2.0', id: 4, result: {} }]);
  });

  it('refuses initialize inside a batch, an empty batch, a batch past the cap, and a message that is not JSON-RPC (400)', async () => {
    const refusals: [unknown, RegExp][] = [
      [[initialize(), ping(2)], /initialize must be sent alone/],
      [[], /An empty batch/],
      [[ping(1), ping(2), ping(3), ping(4), ping(5), ping(6)], /A batch of 6 messages: at most 5 per POST/],
      [[ping(1), { hello: 'world' }], /Message 1 is not a JSON-RPC 2.0 message/],
      [{ jsonrpc: '1.0', id: 1, method: 'ping' }, /The body is not a JSON-RPC 2.0 message/],
      ['{"jsonrpc": "2.0",', /The body is not JSON/],
    ];
    for (const [body, message] of refusals) {
      const r = await call('POST', inSession(), body);
      expect({ body, status: r.status, code: r.json.error.code }).toEqual({ body, status: 400, code: 'invalid_request' });
      expect(r.json.error.message).toMatch(message);
    }
  });

  it('answers logging/setLevel from the session’s row, and refuses a level MCP does not name (-32602)', async () => {
    const r = await call('POST', inSession(), [
      { jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'warning' } },
      { jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'loud' } },
    ]);
    expect(r.json[0]).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    expect(r.json[1]).toMatchObject({ id: 2, error: { code: -32602 } });
    expect(sessions.rows.get(session)?.rank).toBeDefined();
  });

  it('refuses the messages of a batch past the account’s rate limit, one by one, and runs the rest', async () => {
    // A fresh account, and no edge in front to count the POST itself: two of the three other messages fit a limit of 2.
    const fresh = await openSession('acct_rate');
    const limited = as('acct_rate', { 'mcp-session-id': fresh, [INTERNAL.rateLimit]: '2/3600000' });
    const r = await call('POST', limited, [ping(1), ping(2), ping(3), ping(4)]);
    expect(r.status).toBe(200);
    expect(
      r.json.map((a: { id: number; result?: unknown; error?: { data?: { code?: string } } }) => [a.id, a.result ? 'ok' : a.error?.data?.code]),
    ).toEqual([
      [1, 'ok'],
      [2, 'ok'],
      [3, 'ok'],
      [4, 'rate_limited'],
    ]);
  });
});
