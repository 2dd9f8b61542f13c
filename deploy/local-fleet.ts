/**
 * The fleet on one machine: the edge and every service of the service table as separate processes on PostgreSQL
 * and Redis (BUS=redis), the way the cluster runs them. `pnpm fleet` runs it in the foreground and reads the
 * operator's environment exactly as `pnpm start` does (../shared/spec/operations.md); tests import startFleet.
 *
 *   DATABASE_URL  default postgres://postgres@127.0.0.1:5432/gateway_fleet (created when missing)
 *   REDIS_URL     default redis://127.0.0.1:6379
 *   BUS           redis (default) or kafka; memory cannot cross processes
 *   KAFKA_BROKERS with BUS=kafka, the cluster to use; unset, the fleet runs deploy/kafka's broker itself, its data under
 *                 GATEWAY_DATA_DIR/kafka, on 127.0.0.1:FLEET_KAFKA_PORT (default 9092), and stops it on exit
 *   GATEWAY_DATA_DIR  files the services and that broker keep (default .gateway-fleet-data/ in the repository)
 *   PORT, HOST    the edge's listener; each service listens on 127.0.0.1 at a fixed offset from PORT
 *   METRICS_PORT  the edge's probes and metrics (PORT + 1000); each service's sit 1000 above its port
 *   GATEWAY_DEMO_CATALOGUE  true unless set to false: the services may serve simulated upstreams, as `pnpm start` does
 *   GATEWAY_FROM_SOURCE  1: every process runs its TypeScript under tsx (`pnpm fleet:source`); else the bundles of
 *                 dist/, built first when stale (scripts/build.js), as the containers run them
 *   FLEET_REPLICAS  processes per service: `N` for all, `name=N,...` for some, or both (`2,text=3`); `--replicas`
 *                 on the command line says the same and wins. Replica r of a service listens 100 * r above the first;
 *                 with several edges, PORT is a TCP balancer in front of them (deploy/edge-front.ts) and edge r
 *                 listens at PORT + 100 * (r + 1)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import { Client } from 'pg';
import { ConfigError, loadConfig, readEnv, type GatewayEnv } from '@gateway/config';
import {
  EDGE,
  METRICS_PORT_OFFSET,
  PORT_HANDOFF_ENV,
  type ReplicaCounts,
  SERVICES,
  holdPort,
  isReleaseRequest,
  parseReplicas,
  releasedAnswer,
  replicaName,
  replicaPort,
  serviceCommand,
} from '@gateway/topology';

import { FLEET_MIGRATIONS, migrateServiceSchema } from '@gateway/gateway/fleet-migrations';
import { buildIfStale } from '../scripts/build';
import { type EdgeFront, startEdgeFront } from './edge-front';
import { DEFAULT_KAFKA_PORT, ensureKafkaBroker, type RunningBroker } from './kafka/broker';
import { ensureGatewayTopics } from './kafka/topics';

const ROOT = path.resolve(__dirname, '..');
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/gateway_fleet';
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export interface FleetOptions {
  /** The edge's port; the services take theirs at the service table's offsets from it. */
  port?: number;
  /** The edge's bind address (services bind 127.0.0.1). */
  host?: string;
  databaseUrl?: string;
  redisUrl?: string;
  bus?: 'redis' | 'kafka';
  /** With bus kafka: the cluster. Absent, the fleet starts deploy/kafka's broker under <dataDir>/kafka and stops it with itself. */
  kafkaBrokers?: string;
  /** The port of the broker the fleet starts (default 9092); its controller takes the next one. */
  kafkaPort?: number;
  /** GATEWAY_CONFIG for every service; absent, the built-in demo config (the runner consents to it for them). */
  configPath?: string;
  /** GATEWAY_DEMO_CATALOGUE for every service; default true, as `pnpm start` serves simulated upstreams. */
  demoCatalogue?: boolean;
  /** GATEWAY_ADMIN_TOKEN; absent, billing generates one at the database's first start and prints it once. */
  adminToken?: string;
  publicUrl?: string;
  logLevel?: GatewayEnv['LOG_LEVEL'];
  /** Files a service keeps on disk (media without S3), and the broker the fleet starts; default .gateway-fleet-data/ in the repository. */
  dataDir?: string;
  /** Drop the database on stop (tests use a throwaway one). */
  dropDatabaseOnStop?: boolean;
  /** Each process's output goes to <logDir>/<name>.log instead of this terminal. */
  logDir?: string;
  /**
   * What each process runs: its bundle in dist/ (built first when stale), as the containers do, or its TypeScript
   * under tsx. Default: source when GATEWAY_FROM_SOURCE=1, else bundle.
   */
  from?: 'bundle' | 'source';
  env?: Record<string, string>;
  /** Processes per service (edge included): one count for all, or some by name; one each unless given. */
  replicas?: number | Partial<ReplicaCounts>;
}

export interface Fleet {
  /** Where clients call: the edge, or with several edges the balancer in front of them. */
  url: string;
  /** Each edge replica's own listener, in replica order. */
  edgeUrls: string[];
  /** Each service's address as its callers are given it (EDGE_URL, BILLING_URL, ...): its replicas' URLs, comma-separated. */
  addresses: Record<string, string>;
  /** How many processes of each service run; replica r of `name` is the process `name` (r 0) or `name-<r+1>`. */
  replicas: ReplicaCounts;
  /** Each process's probes-and-metrics listener, by process name (edge included). */
  metricsUrls: Record<string, string>;
  adminToken?: string;
  databaseUrl: string;
  /** With bus kafka: the brokers the services use, and the broker's JVM when the fleet started it itself. */
  kafka?: { brokers: string; started: boolean; pid?: number };
  processes: Record<string, ChildProcess>;
  /**
   * Starts one process again (after it exited or was killed) with the environment it had, and waits until it is
   * ready: what a supervisor does after a crash. Refused while the process still runs.
   */
  restart(name: string): Promise<void>;
  stop(): Promise<void>;
}

/** The replica counts of FleetOptions.replicas, every service named. */
export function replicaCounts(replicas: FleetOptions['replicas'] = 1): ReplicaCounts {
  if (typeof replicas === 'number') return parseReplicas(String(replicas));
  return parseReplicas(
    Object.entries(replicas)
      .map(([name, n]) => `${name}=${n}`)
      .join(',') || '1',
  );
}

/** Where each process of a fleet on `port` listens: its name, its port, and whether it is the edge. */
function fleetLayout(port: number, counts: ReplicaCounts): { name: string; service: string; port: number }[] {
  // With several edges, PORT is the balancer's and the edges take the replica slots after it.
  const edgeSlot = counts.edge > 1 ? 1 : 0;
  return [
    ...Array.from({ length: counts.edge }, (_, r) => ({
      name: replicaName(EDGE.name, r),
      service: EDGE.name,
      port: replicaPort(port, r + edgeSlot),
    })),
    ...SERVICES.flatMap((s) =>
      Array.from({ length: counts[s.name] }, (_, r) => ({
        name: replicaName(s.name, r),
        service: s.name as string,
        port: replicaPort(port + (s.port - EDGE.port), r),
      })),
    ),
  ];
}

/** Every port a fleet on `port` listens on (public and metrics), so a caller can check them all before starting. */
export function fleetPorts(port: number, replicas?: FleetOptions['replicas']): number[] {
  const counts = replicaCounts(replicas);
  const front = counts.edge > 1 ? [port] : [];
  return [...front, ...fleetLayout(port, counts).flatMap((p) => [p.port, p.port + METRICS_PORT_OFFSET])];
}

/** Variables this runner sets for its children; an inherited value would point a service at the wrong place. */
const OWNED = [
  'PORT',
  'HOST',
  'METRICS_PORT',
  'GATEWAY_DATA_DIR',
  'DATABASE_URL',
  'REDIS_URL',
  'BUS',
  'KAFKA_BROKERS',
  'KAFKA_TOPIC_PREFIX',
  'GATEWAY_CONFIG',
  'GATEWAY_DEMO_CATALOGUE',
  'GATEWAY_ADMIN_TOKEN',
  'GATEWAY_INTERNAL_TOKEN',
  'GATEWAY_PUBLIC_URL',
  'GATEWAY_BUS_PREFIX',
  'GATEWAY_METER_PREFIX',
  'LOG_LEVEL',
  'EDGE_URL',
  ...SERVICES.map((s) => s.urlEnv),
];

async function withAdminDb<T>(url: string, fn: (c: Client, name: string) => Promise<T>): Promise<T> {
  const admin = new URL(url);
  const name = admin.pathname.slice(1);
  admin.pathname = '/postgres';
  const c = new Client({ connectionString: admin.toString() });
  await c.connect();
  try {
    return await fn(c, name.replace(/"/g, ''));
  } finally {
    await c.end();
  }
}

const ensureDatabase = (url: string) =>
  withAdminDb(url, async (c, name) => {
    const { rowCount } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await c.query(`CREATE DATABASE "${name}"`);
  });

const dropDatabase = (url: string) => withAdminDb(url, (c, name) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));

async function waitReady(metricsUrl: string, child: ChildProcess, name: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} before it was ready`);
    try {
      const r = await fetch(`${metricsUrl}/readyz`);
      if (r.status === 200) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${name} not ready at ${metricsUrl} after ${timeoutMs} ms`);
}

/**
 * The fleet's ports, bound here before any of its processes starts and let go one by one as each process is about to
 * listen (libs/service-kit/src/port-handoff.ts says why): a bound port is never handed out as the local end of an
 * outbound connection, so none of the services' own first connections can take another's port.
 */
class HeldPorts {
  private readonly held = new Map<number, net.Server>();

  async hold(port: number, host: string): Promise<void> {
    try {
      // A port taken only by connections (a test suite's TIME_WAITs just before) is waited for; a listener fails at once.
      const server = await holdPort(port, host, {
        onWait: () => process.stderr.write(`fleet: port ${port} on ${host} is taken by connections that are closing; waiting for it\n`),
      });
      this.held.set(port, server);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw e;
      throw new Error(`port ${port} on ${host} is in use: the fleet listens on PORT, the ports after it and 1000 above each`);
    }
  }

  release(port: number): Promise<void> {
    const server = this.held.get(port);
    if (!server) return Promise.resolve();
    this.held.delete(port);
    return new Promise((resolve) => server.close(() => resolve()));
  }

  releaseAll(): Promise<void> {
    return Promise.all([...this.held.keys()].map((p) => this.release(p))).then(() => undefined);
  }
}

function stopProcess(p: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    const kill = setTimeout(() => p.kill('SIGKILL'), 10_000);
    p.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    p.kill('SIGTERM');
  });
}

/**
 * The fleet's Kafka: the cluster it was given, or deploy/kafka's broker with its log under the fleet's data directory,
 * started unless it already runs from there (then it is not the fleet's to stop). Either way every topic is created
 * under the fleet's prefix, since neither that broker nor a production cluster creates topics on first use.
 */
async function fleetKafka(opts: FleetOptions, dataDir: string, prefix: string): Promise<{ brokers: string; broker?: RunningBroker }> {
  if (opts.kafkaBrokers) {
    await ensureGatewayTopics(opts.kafkaBrokers, { prefix });
    return { brokers: opts.kafkaBrokers };
  }
  const broker = await ensureKafkaBroker({ dataDir: path.join(dataDir, 'kafka'), port: opts.kafkaPort ?? DEFAULT_KAFKA_PORT });
  const brokers = broker.brokers;
  try {
    await ensureGatewayTopics(brokers, { prefix });
  } catch (e) {
    if (broker?.started) await broker.stop();
    throw e;
  }
  return { brokers, broker };
}

export async function startFleet(opts: FleetOptions = {}): Promise<Fleet> {
  const port = opts.port ?? EDGE.port;
  const databaseUrl = opts.databaseUrl ?? DEFAULT_DATABASE_URL;
  const internalToken = crypto.randomBytes(24).toString('hex');
  const dataDir = opts.dataDir ?? path.join(ROOT, '.gateway-fleet-data');
  const dbName = new URL(databaseUrl).pathname.slice(1);
  // Topics and groups per fleet, as the Redis prefix below: fleets sharing a cluster never take each other's settles.
  const kafkaTopicPrefix = `${dbName.replace(/[^\w.-]/g, '_')}.`;
  const from = opts.from ?? (process.env.GATEWAY_FROM_SOURCE === '1' ? 'source' : 'bundle');
  if (from === 'bundle') await buildIfStale();
  await ensureDatabase(databaseUrl);
  // What the migrate Job does in a cluster: the services only check their schema at start.
  for (const service of Object.keys(FLEET_MIGRATIONS)) await migrateServiceSchema(databaseUrl, service);
  const kafka = opts.bus === 'kafka' ? await fleetKafka(opts, dataDir, kafkaTopicPrefix) : undefined;
  const stopBroker = async () => {
    if (kafka?.broker?.started) await kafka.broker.stop();
  };

  const local = (p: number) => `http://127.0.0.1:${p}`;
  const counts = replicaCounts(opts.replicas);
  const layout = fleetLayout(port, counts);
  // A service's address is its replicas' URLs, comma-separated: its callers balance over them (@gateway/topology).
  const addressOf = (service: string) =>
    layout
      .filter((p) => p.service === service)
      .map((p) => local(p.port))
      .join(',');
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => v !== undefined && !OWNED.includes(k))) as Record<
    string,
    string
  >;
  const common: Record<string, string> = {
    ...inherited,
    DATABASE_URL: databaseUrl,
    GATEWAY_DATA_DIR: dataDir,
    REDIS_URL: opts.redisUrl ?? DEFAULT_REDIS_URL,
    BUS: opts.bus ?? 'redis',
    ...(kafka ? { KAFKA_BROKERS: kafka.brokers, KAFKA_TOPIC_PREFIX: kafkaTopicPrefix } : {}),
    // One event stream per fleet: fleets sharing this Redis (tests run several at once) never read each other's settles.
    GATEWAY_BUS_PREFIX: `bus:${dbName}:`,
    // Likewise the rate meter: per client address, public routes would otherwise share one count across fleets.
    GATEWAY_METER_PREFIX: `rl:${dbName}:`,
    ...(opts.adminToken ? { GATEWAY_ADMIN_TOKEN: opts.adminToken } : {}),
    ...(opts.configPath ? { GATEWAY_CONFIG: path.resolve(opts.configPath) } : {}),
    // A fleet service refuses simulated upstreams without this consent. The laptop fleet is `pnpm start` in several
    // processes, whose contract serves the built-in demo catalogue without GATEWAY_CONFIG (operations.md), so it gives it.
    GATEWAY_DEMO_CATALOGUE: String(opts.demoCatalogue ?? true),
    GATEWAY_INTERNAL_TOKEN: internalToken,
    GATEWAY_PUBLIC_URL: opts.publicUrl ?? `http://localhost:${port}`,
    LOG_LEVEL: opts.logLevel ?? 'info',
    ...Object.fromEntries(SERVICES.map((s) => [s.urlEnv, addressOf(s.name)])),
    // The mcp service's tools call the gateway's public routes through the edge, as any client does.
    EDGE_URL: addressOf(EDGE.name),
    ...opts.env,
  };

  const processes: Record<string, ChildProcess> = {};
  const metricsUrls: Record<string, string> = {};
  const listens: Record<string, { port: number; host: string }> = {};
  const held = new HeldPorts();
  const services: Record<string, string> = {};
  let front: EdgeFront | undefined;
  const launch = (name: string, service: string, listen: { port: number; host: string }) => {
    listens[name] = listen;
    services[name] = service;
    const out = opts.logDir ? fs.openSync(path.join(opts.logDir, `${name}.log`), 'a') : 'inherit';
    const metricsPort = listen.port + METRICS_PORT_OFFSET;
    // The container's command (node running the bundle: libs/topology/src/commands.ts), with this node binary: a
    // signal reaches the service itself, and a SIGKILL leaves no orphan behind.
    const [, ...args] = serviceCommand(service, from);
    const child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...common, PORT: String(listen.port), HOST: listen.host, METRICS_PORT: String(metricsPort), [PORT_HANDOFF_ENV]: '1' },
      stdio: ['ignore', out, out, 'ipc'],
    });
    child.on('message', (m) => {
      if (!isReleaseRequest(m)) return;
      void held.release(m.port).then(() => {
        if (child.connected) child.send(releasedAnswer(m.port), () => {});
      });
    });
    processes[name] = child;
    metricsUrls[name] = local(metricsPort);
    return waitReady(metricsUrls[name], child, name);
  };
  const stop = async () => {
    // The balancer first, as a load balancer leaves before its backends: its clients' connections close, so the edges'
    // drain notices end at once instead of waiting out connections nobody will use again.
    await front?.close();
    await Promise.all(Object.values(processes).map(stopProcess));
    await held.releaseAll();
    await stopBroker();
    if (opts.dropDatabaseOnStop) await dropDatabase(databaseUrl);
  };
  try {
    const host = opts.host ?? '127.0.0.1';
    // The edges listen where clients reach them (HOST); with a balancer in front, only it does.
    const hostOf = (service: string) => (service === EDGE.name && counts.edge === 1 ? host : '127.0.0.1');
    for (const p of layout) for (const q of [p.port, p.port + METRICS_PORT_OFFSET]) await held.hold(q, hostOf(p.service));
    if (counts.edge > 1) await held.hold(port, host);
    // Services the others' requests depend on start first; the edge last, once every service answers.
    const first = new Set<string>(SERVICES.filter((s) => 'startsFirst' in s && s.startsFirst).map((s) => s.name));
    const start = (which: (service: string) => boolean) =>
      Promise.all(layout.filter((p) => which(p.service)).map((p) => launch(p.name, p.service, { port: p.port, host: hostOf(p.service) })));
    await start((s) => first.has(s));
    await start((s) => s !== EDGE.name && !first.has(s));
    await start((s) => s === EDGE.name);
    if (counts.edge > 1) {
      await held.release(port);
      front = await startEdgeFront(
        { port, host },
        layout.filter((p) => p.service === EDGE.name).map((p) => ({ port: p.port, host: '127.0.0.1' })),
      );
    }
  } catch (e) {
    await stop();
    throw e;
  }
  const restart = async (name: string) => {
    const p = processes[name];
    if (!p) throw new Error(`no fleet process named ${name}`);
    if (p.exitCode === null && p.signalCode === null) throw new Error(`${name} is still running; stop or kill it first`);
    await launch(name, services[name], listens[name]);
  };
  return {
    url: local(port),
    edgeUrls: layout.filter((p) => p.service === EDGE.name).map((p) => local(p.port)),
    addresses: Object.fromEntries([EDGE.name, ...SERVICES.map((s) => s.name)].map((n) => [n, addressOf(n)])),
    replicas: counts,
    metricsUrls,
    adminToken: opts.adminToken,
    databaseUrl,
    kafka: kafka && { brokers: kafka.brokers, started: kafka.broker?.started ?? false, pid: kafka.broker?.started ? kafka.broker.pid : undefined },
    processes,
    restart,
    stop,
  };
}

/** The replica counts of `pnpm fleet`: `--replicas SPEC` (or `--replicas=SPEC`) over FLEET_REPLICAS; one each when neither. */
export function readReplicas(argv: readonly string[], fromEnv: string | undefined): ReplicaCounts {
  let spec = fromEnv;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--replicas') spec = argv[++i] ?? '';
    else if (argv[i].startsWith('--replicas=')) spec = argv[i].slice('--replicas='.length);
    else throw new ConfigError(`Invalid arguments:\n  ${argv[i]}: the fleet takes only --replicas N or --replicas name=N,...`);
  }
  try {
    return parseReplicas(spec ?? '1');
  } catch (e) {
    throw new ConfigError(`Invalid arguments:\n  ${(e as Error).message}`);
  }
}

/** `pnpm fleet`: the operator's environment, read and refused exactly as `pnpm start` reads it. */
async function main(): Promise<void> {
  const env = readEnv(process.env, { host: '127.0.0.1' });
  if (env.BUS === 'memory')
    throw new ConfigError('Invalid environment:\n  BUS: "memory" cannot carry events between processes; the fleet needs redis or kafka');
  const kafkaPort = process.env.FLEET_KAFKA_PORT ? Number(process.env.FLEET_KAFKA_PORT) : undefined;
  if (kafkaPort !== undefined && !(Number.isInteger(kafkaPort) && kafkaPort > 0 && kafkaPort < 65535))
    throw new ConfigError('Invalid environment:\n  FLEET_KAFKA_PORT: the port of the broker the fleet starts, 1 to 65534');
  if (env.METRICS_PORT !== env.PORT + METRICS_PORT_OFFSET)
    throw new ConfigError(
      `Invalid environment:\n  METRICS_PORT: the local fleet places every metrics listener at its port + ${METRICS_PORT_OFFSET}; unset it`,
    );
  const replicas = readReplicas(process.argv.slice(2), process.env.FLEET_REPLICAS);
  // Refused here, once, before any process starts: the services would each fail with the same message.
  const config = loadConfig(env.GATEWAY_CONFIG);
  // Listening before the first process starts: a SIGTERM while the fleet comes up (the edge may answer before
  // startFleet has seen every service ready) would otherwise kill this process outright and orphan the services.
  let fleet: Fleet | undefined;
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    fleet?.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const starting = startFleet({
    port: env.PORT,
    host: env.HOST,
    databaseUrl: env.DATABASE_URL,
    redisUrl: env.REDIS_URL,
    bus: env.BUS,
    kafkaBrokers: env.KAFKA_BROKERS,
    kafkaPort,
    // readEnv defaults it for `pnpm start`; the fleet keeps its own default unless the operator names one.
    dataDir: process.env.GATEWAY_DATA_DIR ? path.resolve(process.env.GATEWAY_DATA_DIR) : undefined,
    configPath: env.GATEWAY_CONFIG,
    demoCatalogue: env.GATEWAY_DEMO_CATALOGUE !== 'false',
    adminToken: env.GATEWAY_ADMIN_TOKEN,
    publicUrl: env.GATEWAY_PUBLIC_URL,
    logLevel: env.LOG_LEVEL,
    replicas,
  });
  // A start that fails because the stop signal reached the services too (a process group signalled at once) has
  // done what was asked: startFleet has already stopped whatever it had started.
  const started = await starting.catch((e: unknown) => (stopping ? process.exit(0) : Promise.reject(e)));
  fleet = started;
  const lines = [
    '',
    `Fleet ready: ${started.replicas.edge > 1 ? `${started.replicas.edge} edges behind a balancer` : 'edge'} on ${env.HOST}:${env.PORT} (public URL ${env.GATEWAY_PUBLIC_URL})`,
    ...(started.replicas.edge > 1 ? [`  ${'edge'.padEnd(10)} EDGE_URL=${started.edgeUrls.join(',')}`] : []),
    ...SERVICES.map((s) => `  ${s.name.padEnd(10)} ${s.urlEnv}=${started.addresses[s.name]}`),
    `  probes and metrics: each port + ${METRICS_PORT_OFFSET}`,
    `  models: ${config.models.length} from ${env.GATEWAY_CONFIG ?? 'the built-in demo config (simulated upstreams)'}`,
    `  database: ${started.databaseUrl}`,
    `  bus: ${
      started.kafka
        ? `kafka at ${started.kafka.brokers}${started.kafka.started ? ' (started by this fleet, stopped with it)' : ''}`
        : `redis at ${env.REDIS_URL ?? DEFAULT_REDIS_URL}`
    }`,
    started.adminToken
      ? '  admin token: GATEWAY_ADMIN_TOKEN'
      : "  admin token: generated by billing at this database's first start (printed above, once)",
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  // Asked to stop while it came up: it stops now that there is a fleet to stop.
  if (stopping) {
    stopping = false;
    stop();
  }
}

if (require.main === module) {
  main().catch((e: Error) => {
    process.stderr.write(`fleet: ${e.name === 'ConfigError' ? e.message : (e.stack ?? String(e))}\n`);
    process.exit(1);
  });
}
