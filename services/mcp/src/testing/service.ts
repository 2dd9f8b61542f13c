import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createMemoryBus, type EventBus } from '@gateway/bus';
import { buildRegistry } from '@gateway/config';
import type { Db } from '@gateway/db';
import { type Engine, openTestDb, type TestDb } from '@gateway/db/testing';
import { errorHandler } from '@gateway/errors';
import { createMemoryMeter } from '@gateway/ratelimit';
import { createLogger, INTERNAL } from '@gateway/service-kit';
import { createMcpService, type McpLimits, type McpService, mcpLimitsOf, migrations } from '../index';
import { MCP_TEST_CONFIG } from './config';

/** A database whose queries are counted, to tell one query per tick from one per stream. */
export interface CountingDb extends Db {
  readonly queries: number;
}

function counting(db: Db): CountingDb {
  let queries = 0;
  const wrapped = Object.create(db) as Db;
  wrapped.query = ((sql: string, params?: unknown[]) => {
    queries++;
    return db.query(sql, params);
  }) as Db['query'];
  // A getter of its own (Object.assign would copy the count once, as a number).
  return Object.defineProperty(wrapped, 'queries', { get: () => queries }) as CountingDb;
}

export interface McpUnderTest {
  url: string;
  db: CountingDb;
  bus: EventBus;
  service: McpService;
  /** Headers the edge would set for `account`, its rate limit `requests` per hour. */
  as(account: string, requests?: number): Record<string, string>;
  /** Another process of the same fleet: its own hub and poller, the same database. */
  replica(): Promise<McpUnderTest>;
  close(): Promise<void>;
}

/**
 * The mcp service's router alone, behind a stand-in for the edge: the internal headers a test sends are the
 * ones the edge would set after verifying a key (this listener trusts them, as the service behind the edge does).
 */
export async function startMcp(
  engine: Engine,
  limits: Partial<McpLimits> = {},
  opts: { pollMs?: number; shared?: { t: TestDb; bus: EventBus } } = {},
): Promise<McpUnderTest> {
  const t = opts.shared?.t ?? (await openTestDb(engine, 'mcp', migrations));
  const bus = opts.shared?.bus ?? createMemoryBus();
  const db = counting(t.db);
  const service = createMcpService(
    {
      db,
      bus,
      registry: buildRegistry(MCP_TEST_CONFIG),
      logger: createLogger('mcp-test', 'silent'),
      meter: createMemoryMeter(),
      edgeUrl: () => 'http://127.0.0.1:9',
    },
    { maxRequestBody: '8mb', limits: { ...mcpLimitsOf(MCP_TEST_CONFIG), ...limits }, pollMs: opts.pollMs ?? 60_000 },
  );
  await service.start();
  const app = express()
    .use(service.router)
    .use(errorHandler(() => 'req_test'));
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/mcp`;
  const stopThis = async () => {
    service.endStreams();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await service.stop();
  };
  return {
    url,
    db,
    bus,
    service,
    as: (account, requests = 1000) => ({
      [INTERNAL.accountId]: account,
      [INTERNAL.keyId]: `key_${account}`,
      [INTERNAL.apiKey]: `sk_live_${account}`,
      [INTERNAL.rateLimit]: `${requests}/3600000`,
    }),
    replica: () => startMcp(engine, limits, { ...opts, shared: { t, bus } }),
    async close() {
      await stopThis();
      if (!opts.shared) {
        await bus.close();
        await t.close();
      }
    },
  };
}

/** One JSON-RPC POST. */
export async function post(m: McpUnderTest, headers: Record<string, string>, body: unknown, session?: string) {
  const r = await fetch(m.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers, ...(session ? { 'mcp-session-id': session } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, json: text ? JSON.parse(text) : undefined };
}

export const initialize = (clientInfo: unknown = { name: 'test', version: '1' }) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo },
});

/** A new session of `account`: its id. */
export async function openSession(m: McpUnderTest, headers: Record<string, string>): Promise<string> {
  const r = await post(m, headers, initialize());
  if (r.status !== 200) throw new Error(`initialize answered ${r.status}: ${JSON.stringify(r.json)}`);
  return r.headers.get('mcp-session-id') as string;
}

/** An open GET stream: its status, and the SSE `data` messages as they arrive. */
export async function openStream(m: McpUnderTest, headers: Record<string, string>, session: string) {
  const ac = new AbortController();
  const r = await fetch(m.url, { headers: { ...headers, 'mcp-session-id': session, accept: 'text/event-stream' }, signal: ac.signal });
  const messages: unknown[] = [];
  let ended = false;
  const waiters: Array<() => void> = [];
  const reading =
    r.status === 200
      ? (async () => {
          const decoder = new TextDecoder();
          let buf = '';
          try {
            for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
              buf += decoder.decode(chunk, { stream: true });
              for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
                const data = buf
                  .slice(0, i)
                  .split('\n')
                  .find((l) => l.startsWith('data: '));
                buf = buf.slice(i + 2);
                if (data) messages.push(JSON.parse(data.slice(6)));
                for (const w of waiters.splice(0)) w();
              }
            }
          } catch {
            // aborted by close()
          } finally {
            ended = true;
            for (const w of waiters.splice(0)) w();
          }
        })()
      : Promise.resolve();
  return {
    status: r.status,
    body: r.status === 200 ? undefined : await r.json(),
    messages,
    get ended() {
      return ended;
    },
    /** Resolves once `n` messages arrived, or the stream ended. */
    async until(n: number) {
      while (messages.length < n && !ended) await new Promise<void>((resolve) => waiters.push(resolve));
      return messages;
    },
    async close() {
      ac.abort();
      await reading;
    },
  };
}
