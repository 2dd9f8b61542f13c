import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { Pool } from 'pg';
import { parseConfig, readEnv } from '@gateway/config';
import { createLogger } from '@gateway/service-kit';
import { startEmbedded } from '@gateway/gateway';
import { type Fleet, type FleetOptions, fleetPorts, replicaCounts, startFleet } from 'model-gateway/local-fleet';
import { KAFKA, KAFKA_BROKERS, waitFor } from '@gateway/testing';
import { replicaName } from '@gateway/topology';
import { claimTokenWorker, countTokens } from '@gateway/upstreams';
import { textCost, type TextPrice } from './money';

/**
 * How a suite runs the gateway: embedded (one process, in-memory bus), or the fleet (a process per service) with its
 * hold and settle events on Redis Streams (`fleet`) or on Kafka (`fleet-kafka`, the design's transport); a
 * `-replicas` fleet runs REPLICAS processes of every service, as `pnpm fleet --replicas 2` does.
 */
export type Mode = 'embedded' | 'fleet' | 'fleet-kafka' | 'fleet-replicas' | 'fleet-kafka-replicas';

/** A mode that runs the fleet, on either bus. */
export const isFleet = (mode: Mode): boolean => mode !== 'embedded';

/** The processes of every service in a `-replicas` fleet: two, the least that shows state shared across replicas. */
export const REPLICAS = 2;
const onKafka = (mode: Mode): boolean => mode === 'fleet-kafka' || mode === 'fleet-kafka-replicas';
/** A mode whose fleet runs REPLICAS processes of every service. */
export const isReplicated = (mode: Mode): boolean => mode.endsWith('-replicas');
const replicasOf = (mode: Mode): FleetOptions['replicas'] => (isReplicated(mode) ? REPLICAS : undefined);
const manyProcesses = (replicas: FleetOptions['replicas']): boolean => Object.values(replicaCounts(replicas)).some((n) => n > 1);

/**
 * The fleet mode of the suites that carry the design's events (chat and streams, media, jobs, webhooks, stats, MCP):
 * on Kafka wherever a broker answers, which under CI=true it must (an absent one fails their start), else on Redis
 * Streams with a note. Every other fleet suite runs on Redis Streams, so both buses carry the fleet in CI without
 * running any suite twice (docs/architecture.md, "Which bus the fleet runs on").
 */
export const EVENTS_FLEET: Mode = (() => {
  const reason = KAFKA.skipReason();
  if (!reason) return 'fleet-kafka';
  process.stderr.write(`the fleet suites of the design's events run on Redis Streams here: ${reason}\n`);
  return 'fleet';
})();

/**
 * The fleet mode of the money-critical suites (chat and streams, images, audio, jobs, webhooks, MCP, stats):
 * EVENTS_FLEET's bus with two processes of every service, the shape a cluster runs them in (the chart's HPA keeps at
 * least two), the edges behind the fleet's balancer. They run it instead of the one-process fleet, not beside it: the
 * other fleet suites keep one process each, so CI runs both shapes, as it runs both buses, with no suite run twice.
 */
export const REPLICATED_FLEET: Mode = EVENTS_FLEET === 'fleet-kafka' ? 'fleet-kafka-replicas' : 'fleet-replicas';

/** How long a suite's gateway may take to start: fourteen processes instead of seven take longer on a busy machine. */
export const startTimeout = (mode: Mode, fleet: FleetShape = {}): number => (manyProcesses(fleet.replicas ?? replicasOf(mode)) ? 180_000 : 90_000);

export interface TestGateway {
  mode: Mode;
  url: string;
  adminToken: string;
  /** Runs SQL against the billing ledger (its schema), for invariant checks. */
  ledger<T = any>(sql: string, params?: unknown[]): Promise<T[]>;
  admin(method: string, p: string, body?: unknown): Promise<{ status: number; json: any }>;
  /** A fresh account with `credits` USD and one key. */
  account(
    credits: number | string,
    opts?: { rate_limit?: { requests: number; interval: string }; keyLimit?: number },
  ): Promise<{ accountId: string; key: string; keyId: string }>;
  /** Fleet only: kills a service (every replica's process), to prove what the others do without it. */
  killService?(name: 'billing' | 'text' | 'media' | 'catalogue'): Promise<void>;
  /**
   * Base URL of a process's probes-and-metrics listener (never the public one). Embedded, every service shares
   * the one process's; in the fleet each service has its own, so name the one whose figures you want (its first
   * replica's: `scrape` reads them all).
   */
  metricsUrl(service: 'edge' | 'billing' | 'text' | 'media' | 'catalogue'): string;
  /** The Prometheus text of every process of a service, one replica's after another: a call counts on whichever served it. */
  scrape(service: 'edge' | 'billing' | 'text' | 'media' | 'catalogue'): Promise<string>;
  /** Everything the gateway logged so far (at `logLevel`, when startGateway was given one; else nothing embedded). */
  logs(): string;
  /** Fleet only: the fleet itself, every replica's process (to kill one, or restart it) and address. */
  fleet?: Fleet;
  stop(): Promise<void>;
}

/** How a suite's fleet runs: the replicas of each service (`pnpm fleet --replicas`); one each unless given. */
export interface FleetShape {
  replicas?: FleetOptions['replicas'];
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

/**
 * An edge port whose whole fleet (every service's port and metrics port) is free right now, below Linux's ephemeral
 * range (32768+) where outgoing connections take theirs. It can still be taken before the fleet listens (another
 * test's fleet), so callers retry a failed start elsewhere.
 */
export function pickFleetPort(replicas?: FleetOptions['replicas']): Promise<number> {
  return pickPort((p) => fleetPorts(p, replicas), 'a fleet');
}

/**
 * Ports of the fetch standard's block list at or above the range picked from: `fetch` (undici) refuses to connect
 * to them ("bad port"), so a gateway listening there would be unreachable from the tests.
 */
const FETCH_BLOCKED = new Set([10080]);

/** A port below the ephemeral range whose `span` (the ports a gateway listens on from there) is free right now. */
export async function pickPort(span: (port: number) => number[], what: string): Promise<number> {
  for (let i = 0; i < 50; i++) {
    // The metrics listeners sit 1000 above, still below the ephemeral range.
    const candidate = 10_000 + Math.floor(Math.random() * 21_000);
    const ports = span(candidate);
    if (ports.some((p) => FETCH_BLOCKED.has(p))) continue;
    if (await portsFree(ports)) return candidate;
  }
  throw new Error(`no free range of ports for ${what}`);
}

/**
 * Starts a fleet the way the suites do: on a free range of ports, and on another range when the start fails, since
 * another process can take a port between the check and the listen.
 */
export async function onFleetPorts<T>(start: (port: number) => Promise<T>, attempts = 3, replicas?: FleetOptions['replicas']): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(await pickFleetPort(replicas));
    } catch (err) {
      if (attempt >= attempts) throw err;
    }
  }
}

export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function startGateway(mode: Mode, config: unknown, opts: { logLevel?: 'debug' | 'info' } & FleetShape = {}): Promise<TestGateway> {
  const adminToken = `test-admin-${crypto.randomBytes(8).toString('hex')}`;
  const cfg = parseConfig(config);
  const replicas = opts.replicas ?? replicasOf(mode);
  let url: string;
  let ledger: TestGateway['ledger'];
  let stop: () => Promise<void>;
  let killService: TestGateway['killService'];
  let metricsUrl: TestGateway['metricsUrl'];
  let metricsUrls: (service: keyof Fleet['replicas']) => string[];
  let logs: TestGateway['logs'];
  let started: Fleet | undefined;

  if (mode === 'embedded') {
    // The gateway answers absolute URLs under GATEWAY_PUBLIC_URL (media files), so it must know its port before it
    // listens: a free one is picked, and another when the start fails, since something may take it in between.
    let gw: Awaited<ReturnType<typeof startEmbedded>> | undefined;
    const captured: string[] = [];
    logs = () => captured.join('');
    for (let attempt = 1; !gw; attempt++) {
      const port = await pickPort((p) => [p], 'the embedded gateway');
      const env = readEnv({
        PORT: String(port),
        METRICS_PORT: '0',
        HOST: '127.0.0.1',
        GATEWAY_PUBLIC_URL: `http://127.0.0.1:${port}`,
        GATEWAY_ADMIN_TOKEN: adminToken,
        LOG_LEVEL: opts.logLevel ?? 'silent',
      });
      try {
        gw = await startEmbedded(env, cfg, createLogger('test', opts.logLevel ?? 'silent', { write: (line: string) => void captured.push(line) }));
      } catch (e) {
        if (attempt >= 3) throw e;
      }
    }
    url = gw.url;
    metricsUrl = () => gw.metricsUrl;
    metricsUrls = () => [gw.metricsUrl];
    // The embedded ledger is written behind to PGlite: a check reads the tables once they hold every decision so far.
    ledger = async (sql, params) => {
      await gw!.ledgerFlushed();
      return (await gw!.billingDb.query(sql, params)) as any[];
    };
    stop = gw.stop;
  } else {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-fleet-'));
    const configPath = path.join(dir, 'config.json');
    fs.writeFileSync(configPath, JSON.stringify(config));
    let dbUrl = new URL(PG_URL);
    const fleet = await onFleetPorts(
      (port) => {
        dbUrl = new URL(PG_URL);
        dbUrl.pathname = `/gw_test_${crypto.randomBytes(6).toString('hex')}`;
        return startFleet({
          port,
          // Kafka: the topics and groups take the fleet's prefix (its database name), so suites sharing the broker never
          // see each other's events; the fleet creates the topics, as the broker creates none on first use.
          ...(onKafka(mode) ? { bus: 'kafka' as const, kafkaBrokers: KAFKA_BROKERS.join(',') } : {}),
          // The URL the tests reach it by, so the media URLs it answers are fetchable as they are.
          publicUrl: `http://127.0.0.1:${port}`,
          databaseUrl: dbUrl.toString(),
          configPath,
          adminToken,
          dropDatabaseOnStop: true,
          logDir: dir,
          dataDir: dir,
          env: { LOG_LEVEL: opts.logLevel ?? 'warn' },
          replicas,
        });
      },
      3,
      replicas,
    );
    started = fleet;
    logs = () =>
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.log'))
        .map((f) => fs.readFileSync(path.join(dir, f), 'utf8'))
        .join('');
    const pool = new Pool({ connectionString: dbUrl.toString(), max: 2, options: '-c search_path=billing' });
    url = fleet.url;
    metricsUrl = (service) => fleet.metricsUrls[service];
    const replicaNames = (service: keyof Fleet['replicas']) => Array.from({ length: fleet.replicas[service] }, (_, r) => replicaName(service, r));
    metricsUrls = (service) => replicaNames(service).map((name) => fleet.metricsUrls[name]);
    ledger = async (sql, params) => (await pool.query(sql, params as unknown[])).rows;
    killService = async (name) => {
      await Promise.all(
        replicaNames(name).map((n) => {
          const p = fleet.processes[n];
          const gone = new Promise<void>((r) => p.once('exit', () => r()));
          p.kill('SIGKILL');
          return gone;
        }),
      );
    };
    stop = async () => {
      await pool.end();
      await fleet.stop();
    };
  }

  const admin = adminClient(url, adminToken);

  return {
    mode,
    url,
    adminToken,
    ledger,
    admin,
    killService,
    metricsUrl,
    scrape: async (service) => (await Promise.all(metricsUrls(service).map(async (u) => (await fetch(`${u}/metrics`)).text()))).join('\n'),
    logs,
    fleet: started,
    account: (credits, opts) => openAccount(admin, credits, opts),
    stop,
  };
}

/** A gateway's admin API as the suites call it: the status and the parsed JSON answer (undefined for no body). */
export function adminClient(url: string, adminToken: string): TestGateway['admin'] {
  return async (method, p, body) => {
    const r = await fetch(`${url}${p}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, json: text ? JSON.parse(text) : undefined };
  };
}

/** A fresh account with `credits` USD and one key (`label`, default "test"), through the admin API. */
export async function openAccount(
  admin: TestGateway['admin'],
  credits: number | string,
  opts: { rate_limit?: { requests: number; interval: string }; keyLimit?: number; label?: string } = {},
): Promise<{ accountId: string; key: string; keyId: string }> {
  const a = await admin('POST', '/admin/v1/accounts', { credits, ...(opts.rate_limit ? { rate_limit: opts.rate_limit } : {}) });
  if (a.status !== 201) throw new Error(`account: ${a.status} ${JSON.stringify(a.json)}`);
  const k = await admin('POST', `/admin/v1/accounts/${a.json.data.account_id}/keys`, {
    label: opts.label ?? 'test',
    ...(opts.keyLimit !== undefined ? { limit: opts.keyLimit } : {}),
  });
  if (k.status !== 201) throw new Error(`key: ${k.status} ${JSON.stringify(k.json)}`);
  return { accountId: a.json.data.account_id, key: k.json.data.key, keyId: k.json.data.key_id };
}

/** The ledger's SQL, all the checks below need: a started gateway, or a fleet a suite started itself. */
export type LedgerAccess = Pick<TestGateway, 'ledger'>;

/** The ledger of a fleet a suite started itself (not through startGateway), and a way to let go of it. */
export function fleetLedger(databaseUrl: string): LedgerAccess & { close(): Promise<void> } {
  const pool = new Pool({ connectionString: databaseUrl, max: 2, options: '-c search_path=billing' });
  return {
    ledger: async (sql, params) => (await pool.query(sql, params as unknown[])).rows,
    close: () => pool.end(),
  };
}

/** How often billing releases expired holds (its default), and the slack a loaded machine needs on top of it. */
export const SWEEP_INTERVAL_MS = 5_000;
const SWEEP_SLACK_MS = 5_000;

/**
 * MONEY.md's invariants 1 to 3, checked against the ledger itself: per account and per key, `held` is the sum of
 * the open holds and the usage the sum of the settled charges; nothing is overspent (no negative `available`, no
 * key past its spend limit); no hold stays open past its expiry and a sweep; every settled hold has its one record.
 */
export async function expectLedgerInvariants(gw: LedgerAccess): Promise<void> {
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

  const keys = await gw.ledger(`
    SELECT k.id, k.held::text AS held, k.usage::text AS usage, k.spend_limit::text AS spend_limit,
      COALESCE((SELECT sum(amount) FROM holds h WHERE h.key_id = k.id AND h.state = 'open'), 0)::text AS open_holds,
      COALESCE((SELECT sum(charge) FROM holds h WHERE h.key_id = k.id AND h.state IN ('settled', 'expired')), 0)::text AS charges
    FROM api_keys k`);
  for (const k of keys) {
    expect({ key: k.id, held: k.held, usage: k.usage }).toEqual({ key: k.id, held: k.open_holds, usage: k.charges });
    // A hold is placed only while usage + held + amount fits the cap, and a charge never exceeds its hold.
    if (k.spend_limit !== null)
      expect({ key: k.id, within_limit: BigInt(k.usage) + BigInt(k.held) <= BigInt(k.spend_limit) }).toEqual({ key: k.id, within_limit: true });
  }

  const overdue = await gw.ledger(
    `SELECT id, request_id, expires_at::text AS expires_at FROM holds WHERE state = 'open' AND expires_at < now() - $1::bigint * interval '1 millisecond'`,
    [SWEEP_INTERVAL_MS + SWEEP_SLACK_MS],
  );
  expect(overdue).toEqual([]);

  const orphans = await gw.ledger(
    `SELECT h.id FROM holds h LEFT JOIN usage_records u ON u.hold_id = h.id WHERE h.state = 'settled' AND u.request_id IS NULL`,
  );
  expect(orphans).toEqual([]);
}

/** Waits until no hold of the account (or, without one, of any account) is open: settles travel over the bus. */
export async function settled(gw: LedgerAccess, accountId?: string, timeoutMs = 5_000): Promise<void> {
  const open =
    accountId === undefined
      ? () => gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE state = 'open'`)
      : () => gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1 AND state = 'open'`, [accountId]);
  await waitFor(
    async () => Number((await open())[0].n) === 0,
    `the open holds ${accountId === undefined ? 'of every account' : `of ${accountId}`} to close`,
    timeoutMs,
  );
}

/** Waits until `sql` finds a row in the ledger (a hold placed, a record written), and returns that row. */
export async function ledgerRow<T = any>(gw: LedgerAccess, what: string, sql: string, params: unknown[] = [], timeoutMs = 5_000): Promise<T> {
  let row: T | undefined;
  await waitFor(async () => (row = (await gw.ledger<T>(sql, params))[0]) !== undefined, what, timeoutMs);
  return row!;
}

/** How many holds the account has ever had, in any state: a refusal or a failure before the hold leaves it unchanged. */
export async function holdCount(gw: LedgerAccess, accountId: string): Promise<number> {
  return (await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [accountId]))[0].n;
}

/** A request's hold once it has closed: what was reserved, what was charged, and its state. */
export async function closedHold(
  gw: LedgerAccess,
  accountId: string,
  requestId: string | null,
): Promise<{ amount: string; charge: string; state: string }> {
  await settled(gw, accountId);
  const [h] = await gw.ledger(`SELECT amount::text AS amount, charge::text AS charge, state FROM holds WHERE request_id = $1`, [requestId]);
  return h;
}

/** A request's usage record, as the ledger wrote it (after its hold closed). */
export async function usageRecord(
  gw: LedgerAccess,
  accountId: string,
  requestId: string | null,
): Promise<{
  model: string;
  status: string;
  error_code: string | null;
  tokens_prompt: number;
  tokens_completion: number;
  attempts: number;
  fallback_used: boolean;
  cost: string;
}> {
  await settled(gw, accountId);
  const [r] = await gw.ledger(
    `SELECT model, status, error_code, tokens_prompt, tokens_completion, attempts, fallback_used, total_cost::text AS cost FROM usage_records WHERE request_id = $1`,
    [requestId],
  );
  return r;
}

/**
 * MONEY.md's rule for a stream cut after its first byte, by the upstream or by a client that left: the prompt and
 * the completion tokens delivered, both counted, are charged (never the worst case), and the record says failed.
 */
export async function expectChargedForDelivered(
  gw: LedgerAccess,
  accountId: string,
  requestId: string | null,
  sent: { prompt: string; delivered: string; price: TextPrice },
): Promise<void> {
  const prompt = await countTokens(sent.prompt);
  const completion = await countTokens(sent.delivered);
  expect(completion).toBeGreaterThan(0); // with nothing delivered the rule is a release (expectReleased)
  const charge = textCost(sent.price, prompt, completion).toString();
  expect(await usageRecord(gw, accountId, requestId)).toMatchObject({
    status: 'failed',
    error_code: 'upstream_unavailable',
    tokens_prompt: prompt,
    tokens_completion: completion,
    cost: charge,
  });
  const hold = await closedHold(gw, accountId, requestId);
  expect(hold).toMatchObject({ state: 'settled', charge });
  expect(BigInt(hold.charge)).toBeLessThan(BigInt(hold.amount));
}

/** A request whose hold was released: nothing charged, and the record names why. */
export async function expectReleased(gw: LedgerAccess, accountId: string, requestId: string | null, errorCode: string): Promise<void> {
  expect(await closedHold(gw, accountId, requestId)).toMatchObject({ state: 'released', charge: '0' });
  expect(await usageRecord(gw, accountId, requestId)).toMatchObject({ status: 'failed', error_code: errorCode, cost: '0' });
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
 * account, hand them to `bind`; after each test wait for every settle, check the ledger's invariants and that the
 * test asserted something itself; stop all after.
 */
export function useGatewaySuite<U extends Closable | Closable[]>(
  mode: Mode,
  opts: { upstreams: () => Promise<U>; config: (upstreams: U) => unknown; credits: number | string; fleet?: FleetShape },
  bind: (suite: Suite<U>) => void,
): void {
  let suite: Suite<U> | undefined;
  let upstreams: U | undefined;
  // The suite counts tokens itself (expectChargedForDelivered, and suites that check a count): it holds the counting
  // thread as a gateway does, so the thread ends with the suite and not with the jest worker process. Taken in
  // beforeAll: jest skips both hooks of a describe whose tests are all filtered out, and a claim never released
  // would keep the thread for the file's other describe.
  let releaseTokenWorker: (() => Promise<void>) | undefined;
  beforeAll(
    async () => {
      releaseTokenWorker = claimTokenWorker();
      upstreams = await opts.upstreams();
      const gw = await startGateway(mode, opts.config(upstreams), opts.fleet);
      suite = { upstreams, gw, acct: await gw.account(opts.credits) };
      bind(suite);
    },
    startTimeout(mode, opts.fleet),
  );
  afterEach(async () => {
    // Read before the checks below add theirs: a test must not pass on the invariants' assertions alone.
    const asserted = expect.getState().assertionCalls;
    if (!suite) return;
    await settled(suite.gw);
    await expectLedgerInvariants(suite.gw);
    if (asserted === 0) {
      // Fails the test as expect.hasAssertions() would, which jest reports only when nothing else failed it.
      expect.hasAssertions();
      expect.setState({ assertionCalls: 0 });
    }
  });
  afterAll(async () => {
    await suite?.gw.stop();
    const list: Closable[] = Array.isArray(upstreams) ? upstreams : upstreams ? [upstreams] : [];
    await Promise.all(list.map((u) => u.close()));
    await releaseTokenWorker?.();
  });
}
