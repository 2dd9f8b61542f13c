import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { Pool } from 'pg';
import { parseConfig, readEnv } from '@gateway/config';
import { createLogger } from '@gateway/service-kit';
import { startEmbedded } from '@gateway/gateway';
import { fleetPorts, startFleet } from '../../deploy/local-fleet';

export type Mode = 'embedded' | 'fleet';

export interface TestGateway {
  mode: Mode;
  url: string;
  adminToken: string;
  /** Runs SQL against the billing ledger (its schema), for invariant checks. */
  ledger<T = any>(sql: string, params?: unknown[]): Promise<T[]>;
  admin(method: string, p: string, body?: unknown): Promise<{ status: number; json: any }>;
  /** A fresh account with `credits` USD and one key. */
  account(credits: number | string, opts?: { rate_limit?: { requests: number; interval: string }; keyLimit?: number }): Promise<{ accountId: string; key: string; keyId: string }>;
  /** Fleet only: stops one service's process, to prove what the others do without it. */
  killService?(name: 'billing' | 'text' | 'catalogue'): Promise<void>;
  /**
   * Base URL of a process's probes-and-metrics listener (never the public one). Embedded, every service shares
   * the one process's; in the fleet each service has its own, so name the one whose figures you want.
   */
  metricsUrl(service: 'edge' | 'billing' | 'text' | 'catalogue'): string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

async function portsFree(ports: number[]): Promise<boolean> {
  for (const port of ports) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (!ok) return false;
  }
  return true;
}

export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function startGateway(mode: Mode, config: unknown): Promise<TestGateway> {
  const adminToken = `test-admin-${crypto.randomBytes(8).toString('hex')}`;
  const cfg = parseConfig(config);
  let url: string;
  let ledger: TestGateway['ledger'];
  let stop: () => Promise<void>;
  let killService: TestGateway['killService'];
  let metricsUrl: TestGateway['metricsUrl'];

  if (mode === 'embedded') {
    const env = readEnv({ PORT: '0', HOST: '127.0.0.1', GATEWAY_ADMIN_TOKEN: adminToken, LOG_LEVEL: 'silent' });
    const gw = await startEmbedded(env, cfg, createLogger('test', 'silent'));
    url = gw.url;
    metricsUrl = () => gw.metricsUrl;
    ledger = (sql, params) => gw.billingDb.query(sql, params) as Promise<any[]>;
    stop = gw.stop;
  } else {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-fleet-'));
    const configPath = path.join(dir, 'config.json');
    fs.writeFileSync(configPath, JSON.stringify(config));
    const dbUrl = new URL(PG_URL);
    // Ports below Linux's ephemeral range (32768+), where outgoing connections take theirs. A port can still be
    // taken between the check and the listen (another test's fleet), so a failed start is retried elsewhere.
    let fleet: Awaited<ReturnType<typeof startFleet>> | undefined;
    for (let attempt = 1; !fleet; attempt++) {
      let base = 0;
      for (let i = 0; i < 20 && !base; i++) {
        // The metrics listeners sit 1000 above, still below the ephemeral range.
        const candidate = 10_000 + Math.floor(Math.random() * 21_000);
        if (await portsFree(fleetPorts(candidate))) base = candidate;
      }
      dbUrl.pathname = `/gw_test_${crypto.randomBytes(6).toString('hex')}`;
      try {
        fleet = await startFleet({ port: base || (await freePort()), databaseUrl: dbUrl.toString(), configPath, adminToken, dropDatabaseOnStop: true, logDir: dir, env: { LOG_LEVEL: 'warn' } });
      } catch (e) {
        if (attempt >= 3) throw e;
      }
    }
    const pool = new Pool({ connectionString: dbUrl.toString(), max: 2, options: '-c search_path=billing' });
    url = fleet.url;
    metricsUrl = (service) => fleet.metricsUrls[service];
    ledger = async (sql, params) => (await pool.query(sql, params as unknown[])).rows;
    killService = async (name) => {
      const p = fleet.processes[name];
      const gone = new Promise<void>((r) => p.once('exit', () => r()));
      p.kill('SIGKILL');
      await gone;
    };
    stop = async () => {
      await pool.end();
      await fleet.stop();
    };
  }

  const admin: TestGateway['admin'] = async (method, p, body) => {
    const r = await fetch(`${url}${p}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, json: text ? JSON.parse(text) : undefined };
  };

  return {
    mode,
    url,
    adminToken,
    ledger,
    admin,
    killService,
    metricsUrl,
    async account(credits, opts = {}) {
      const a = await admin('POST', '/admin/v1/accounts', { credits, ...(opts.rate_limit ? { rate_limit: opts.rate_limit } : {}) });
      if (a.status !== 201) throw new Error(`account: ${a.status} ${JSON.stringify(a.json)}`);
      const k = await admin('POST', `/admin/v1/accounts/${a.json.data.account_id}/keys`, { label: 'test', ...(opts.keyLimit !== undefined ? { limit: opts.keyLimit } : {}) });
      if (k.status !== 201) throw new Error(`key: ${k.status} ${JSON.stringify(k.json)}`);
      return { accountId: a.json.data.account_id, key: k.json.data.key, keyId: k.json.data.key_id };
    },
    stop,
  };
}

/** MONEY.md's invariants 1 and 3, checked against the ledger itself. */
export async function expectLedgerInvariants(gw: TestGateway): Promise<void> {
  const accounts = await gw.ledger(`
    SELECT a.id, a.held::text AS held, a.total_usage::text AS total_usage, (a.total_credits - a.total_usage - a.held)::text AS available,
      COALESCE((SELECT sum(amount) FROM holds h WHERE h.account_id = a.id AND h.state = 'open'), 0)::text AS open_holds,
      COALESCE((SELECT sum(charge) FROM holds h WHERE h.account_id = a.id AND h.state IN ('settled', 'expired')), 0)::text AS charges,
      COALESCE((SELECT sum(total_cost) FROM usage_records u WHERE u.account_id = a.id), 0)::text AS recorded
    FROM accounts a`);
  for (const a of accounts) {
    expect({ id: a.id, held: a.held, usage: a.total_usage }).toEqual({ id: a.id, held: a.open_holds, usage: a.charges });
    expect(BigInt(a.available) >= 0n).toBe(true);
    expect(a.recorded).toBe(a.total_usage);
  }
  const orphans = await gw.ledger(`SELECT h.id FROM holds h LEFT JOIN usage_records u ON u.hold_id = h.id WHERE h.state = 'settled' AND u.request_id IS NULL`);
  expect(orphans).toEqual([]);
}

/** Waits until no hold of the account is open (settles travel over the bus). */
export async function settled(gw: TestGateway, accountId: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1 AND state = 'open'`, [accountId]);
    if (Number(row.n) === 0) return;
    if (Date.now() > deadline) throw new Error(`holds still open for ${accountId}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A request's hold once it has closed: what was reserved, what was charged, and its state. */
export async function closedHold(gw: TestGateway, accountId: string, requestId: string | null): Promise<{ amount: string; charge: string; state: string }> {
  await settled(gw, accountId);
  const [h] = await gw.ledger(`SELECT amount::text AS amount, charge::text AS charge, state FROM holds WHERE request_id = $1`, [requestId]);
  return h;
}

/** GET /v1/generation for a request id, as the caller sees it. */
export async function generationOf(gw: TestGateway, key: string, requestId: string | null): Promise<any> {
  return (await (await fetch(`${gw.url}/v1/generation?id=${requestId}`, { headers: { authorization: `Bearer ${key}` } })).json()).data;
}

type Closable = { close(): Promise<void> };

export interface Suite<U> {
  /** The fake upstreams the suite started (one, or a tuple). */
  upstreams: U;
  gw: TestGateway;
  /** A funded account with one key. */
  acct: { accountId: string; key: string; keyId: string };
}

/**
 * The lifecycle every route's e2e suite shares: start the fake upstreams and the gateway in `mode`, fund an
 * account, hand them to `bind`; after each test wait for settles and check the ledger's invariants; stop all after.
 */
export function useGatewaySuite<U extends Closable | Closable[]>(
  mode: Mode,
  opts: { upstreams: () => Promise<U>; config: (upstreams: U) => unknown; credits: number | string },
  bind: (suite: Suite<U>) => void,
): void {
  let suite: Suite<U> | undefined;
  let upstreams: U | undefined;
  beforeAll(async () => {
    upstreams = await opts.upstreams();
    const gw = await startGateway(mode, opts.config(upstreams));
    suite = { upstreams, gw, acct: await gw.account(opts.credits) };
    bind(suite);
  }, 90_000);
  afterEach(async () => {
    if (!suite) return;
    await settled(suite.gw, suite.acct.accountId);
    await expectLedgerInvariants(suite.gw);
  });
  afterAll(async () => {
    await suite?.gw.stop();
    const list: Closable[] = Array.isArray(upstreams) ? upstreams : upstreams ? [upstreams] : [];
    await Promise.all(list.map((u) => u.close()));
  });
}
