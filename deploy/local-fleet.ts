/**
 * The fleet on one machine: edge, billing, text and catalogue as separate processes on PostgreSQL and Redis
 * (BUS=redis), the way the cluster runs them. `pnpm fleet` runs it in the foreground; tests import startFleet.
 *
 *   DATABASE_URL  default postgres://postgres@127.0.0.1:5432/gateway_fleet (created when missing)
 *   REDIS_URL     default redis://127.0.0.1:6379
 *   PORT          edge port, default 8080; services take the next three ports
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';

const ROOT = path.resolve(__dirname, '..');

export interface FleetOptions {
  port?: number;
  databaseUrl?: string;
  redisUrl?: string;
  configPath?: string;
  adminToken?: string;
  /** Drop the database on stop (tests use a throwaway one). */
  dropDatabaseOnStop?: boolean;
  logDir?: string;
  env?: Record<string, string>;
}

export interface Fleet {
  url: string;
  adminToken: string;
  databaseUrl: string;
  processes: Record<string, ChildProcess>;
  stop(): Promise<void>;
}

async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = target.pathname.slice(1);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const c = new Client({ connectionString: admin.toString() });
  await c.connect();
  try {
    const { rowCount } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await c.query(`CREATE DATABASE "${name.replace(/"/g, '')}"`);
  } finally {
    await c.end();
  }
}

async function dropDatabase(url: string): Promise<void> {
  const admin = new URL(url);
  const name = admin.pathname.slice(1);
  admin.pathname = '/postgres';
  const c = new Client({ connectionString: admin.toString() });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '')}" WITH (FORCE)`);
  } finally {
    await c.end();
  }
}

async function waitReady(url: string, child: ChildProcess, name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} before it was ready`);
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.status === 200) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${name} not ready at ${url} after ${timeoutMs} ms`);
}

export async function startFleet(opts: FleetOptions = {}): Promise<Fleet> {
  const port = opts.port ?? 8080;
  const databaseUrl = opts.databaseUrl ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/gateway_fleet';
  const redisUrl = opts.redisUrl ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const adminToken = opts.adminToken ?? process.env.GATEWAY_ADMIN_TOKEN ?? `gwadm_${crypto.randomBytes(18).toString('hex')}`;
  const internalToken = crypto.randomBytes(24).toString('hex');
  await ensureDatabase(databaseUrl);

  const ports = { edge: port, billing: port + 1, text: port + 2, catalogue: port + 3 };
  const url = (p: number) => `http://127.0.0.1:${p}`;
  const common: Record<string, string> = {
    ...(process.env as Record<string, string>),
    ...opts.env,
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    BUS: 'redis',
    // One event stream per fleet: fleets sharing this Redis (tests run several at once) never read each other's settles.
    GATEWAY_BUS_PREFIX: `bus:${new URL(databaseUrl).pathname.slice(1)}:`,
    GATEWAY_ADMIN_TOKEN: adminToken,
    GATEWAY_INTERNAL_TOKEN: internalToken,
    GATEWAY_PUBLIC_URL: process.env.GATEWAY_PUBLIC_URL ?? url(port),
    BILLING_URL: url(ports.billing),
    TEXT_URL: url(ports.text),
    CATALOGUE_URL: url(ports.catalogue),
    ...(opts.configPath ? { GATEWAY_CONFIG: opts.configPath } : {}),
  };
  if (!opts.configPath) delete common.GATEWAY_CONFIG;

  const processes: Record<string, ChildProcess> = {};
  const launch = (name: keyof typeof ports) => {
    const out = opts.logDir ? fs.openSync(path.join(opts.logDir, `${name}.log`), 'a') : 'inherit';
    // node with tsx's loader rather than the tsx CLI: the CLI runs the service in a child process, so a signal to
    // the CLI (SIGKILL above all) would leave the service running as an orphan.
    processes[name] = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'services', name, 'src', 'main.ts')], {
      cwd: ROOT,
      env: { ...common, PORT: String(ports[name]) },
      stdio: ['ignore', out, out],
    });
    return waitReady(url(ports[name]), processes[name], name);
  };
  const stop = async () => {
    await Promise.all(
      Object.values(processes).map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            const kill = setTimeout(() => p.kill('SIGKILL'), 10_000);
            p.once('exit', () => {
              clearTimeout(kill);
              resolve();
            });
            p.kill('SIGTERM');
          }),
      ),
    );
    if (opts.dropDatabaseOnStop) await dropDatabase(databaseUrl);
  };
  try {
    // billing first: it runs the ledger migrations the others' requests depend on
    await launch('billing');
    await Promise.all([launch('text'), launch('catalogue')]);
    await launch('edge');
  } catch (e) {
    await stop();
    throw e;
  }
  return { url: url(port), adminToken, databaseUrl, processes, stop };
}

if (require.main === module) {
  startFleet({ port: Number(process.env.PORT ?? 8080) }).then(
    (fleet) => {
      process.stdout.write(`\nFleet ready: edge ${fleet.url}, billing/text/catalogue on the next ports\n  Admin token: ${fleet.adminToken}\n  Database: ${fleet.databaseUrl}\n\n`);
      const stop = () => fleet.stop().then(() => process.exit(0));
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    },
    (e) => {
      process.stderr.write(`fleet: ${(e as Error).message}\n`);
      process.exit(1);
    },
  );
}
