import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client, Pool } from 'pg';
import { type Fleet, startFleet } from 'model-gateway/local-fleet';
import { IN_CI, waitFor } from '@gateway/testing';
import { TEXT_PRICE } from '../../support/config';
import { adminClient, type LedgerAccess, onFleetPorts, openAccount } from '../../support/harness';

/**
 * PostgreSQL and Redis of a suite's own, for tests that stop and restart them: the machine's shared servers (5432,
 * 6379) serve every other suite at the same time and are never touched. Each engine runs in a temporary directory
 * on a free port, without durability against a machine crash (fsync off, no snapshots), and is removed with its
 * files by `stop()`.
 *
 * PostgreSQL comes from /usr/lib/postgresql/<newest>/bin (or PG_BIN); as root (CI here), its programs run as the
 * `postgres` user, since initdb and postgres refuse root. Redis is `redis-server` on the PATH (or REDIS_SERVER).
 */

export interface PrivatePostgres {
  port: number;
  /** postgres://postgres@127.0.0.1:<port>/<database>: the cluster's trust-authenticated superuser. */
  url(database?: string): string;
  /** Stops the server: `fast` closes every session, `immediate` is a crash (recovery at the next start). */
  stopServer(mode?: 'fast' | 'immediate'): void;
  /** Starts it again on the same port and data, waiting until it accepts connections. */
  startServer(): Promise<void>;
  /** `pg_ctl restart`, waiting until it accepts connections again. */
  restart(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Stops the server for good and deletes its directory. */
  stop(): Promise<void>;
}

export interface PrivateRedis {
  port: number;
  url: string;
  /**
   * Stops the server. `crash`: SIGKILL, and whatever it held is gone (no persistence: the restart is empty).
   * `save`: SHUTDOWN SAVE, as an operator's restart of a Redis with persistence: the restart has every stream,
   * consumer group and pending entry it had. Either way every connection drops and the port stays free.
   */
  stopServer(mode: 'crash' | 'save'): Promise<void>;
  /** Starts it again on the same port (with what `save` kept), waiting until it answers PING. */
  startServer(): Promise<void>;
  /** One command on a fresh connection; the reply as RESP decodes it (errors thrown). */
  command(...args: Array<string | number>): Promise<unknown>;
  /** Commands in one MULTI/EXEC: no other client's command runs between them. Resolves with EXEC's replies. */
  atomically(...commands: Array<Array<string | number>>): Promise<unknown[]>;
  /** Stops the server for good and deletes its directory. */
  stop(): Promise<void>;
}

/** The newest installed PostgreSQL's programs, or PG_BIN. */
function pgBin(): string | undefined {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return undefined;
  const versions = fs
    .readdirSync(root)
    .filter((v) => fs.existsSync(path.join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? path.join(root, versions[0], 'bin') : undefined;
}

function redisServer(): string | undefined {
  if (process.env.REDIS_SERVER) return process.env.REDIS_SERVER;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const p = path.join(dir, 'redis-server');
    if (dir && fs.existsSync(p)) return p;
  }
  return undefined;
}

/**
 * Why suites needing private engines cannot run here; undefined when they can. Under CI=true nothing is a skip:
 * the suite runs and fails in its first hook, naming what is missing.
 */
export function privateEnginesSkipReason(): string | undefined {
  if (IN_CI) return undefined;
  if (!pgBin()) return 'no PostgreSQL programs (initdb, pg_ctl) in /usr/lib/postgresql/*/bin or PG_BIN';
  if (!redisServer()) return 'no redis-server on the PATH or in REDIS_SERVER';
  return undefined;
}

/** A port free right now on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs a PostgreSQL program as `postgres` when this process is root, as this user otherwise. */
function pgRun(bin: string, program: string, args: string[]): string {
  const exe = path.join(bin, program);
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', exe, ...args]] : [exe, args];
  try {
    return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${program} ${args.join(' ')} failed: ${err.message}\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
}

async function acceptsConnections(url: string): Promise<boolean> {
  const c = new Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    await c.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** A PostgreSQL cluster of its own: initdb in a temporary directory, started on a free port (trust auth, fsync off). */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = pgBin();
  if (!bin) throw new Error('private PostgreSQL: no initdb/pg_ctl in /usr/lib/postgresql/*/bin (set PG_BIN)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-private-pg-'));
  const data = path.join(dir, 'data');
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    fs.chownSync(dir, uid, gid);
  }
  pgRun(bin, 'initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  let port = 0;
  // The socket directory is the cluster's own, so nothing clashes with the machine's server in /var/run/postgresql.
  // fsync off survives a crash of the server (the OS keeps what it wrote), only not one of the machine; commits stay
  // synchronous: with synchronous_commit off an immediate stop would lose acknowledged commits, a fault of the test's
  // own making.
  const opts = () => `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c full_page_writes=off -c max_connections=300`;
  const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const ctl = (...args: string[]) => pgRun(bin, 'pg_ctl', ['-D', data, '-l', path.join(dir, 'server.log'), ...args]);
  const ready = () => waitFor(() => acceptsConnections(url()), `the private PostgreSQL on ${port} to accept connections`, 30_000);

  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      ctl('-o', opts(), '-w', '-t', '30', 'start');
      break;
    } catch (e) {
      // Another process may have taken the port in between; a different one is tried.
      if (attempt >= 3) throw e;
    }
  }
  await ready();
  let running = true;

  return {
    port,
    url,
    stopServer(mode = 'fast') {
      ctl('-m', mode, '-w', '-t', '30', 'stop');
      running = false;
    },
    async startServer() {
      ctl('-o', opts(), '-w', '-t', '30', 'start');
      running = true;
      await ready();
    },
    async restart(mode = 'fast') {
      ctl('-m', mode, '-o', opts(), '-w', '-t', '30', 'restart');
      running = true;
      await ready();
    },
    async stop() {
      if (running) {
        try {
          ctl('-m', 'immediate', '-w', '-t', '30', 'stop');
        } catch {
          /* already down */
        }
        running = false;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Decodes one RESP reply from the start of `buf`: the value and where it ends, or undefined while incomplete. */
function decodeResp(buf: string, at = 0): { value: unknown; end: number } | undefined {
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return undefined;
  const type = buf[at];
  const line = buf.slice(at + 1, eol);
  if (type === '+') return { value: line, end: eol + 2 };
  if (type === '-') return { value: new Error(line), end: eol + 2 };
  if (type === ':') return { value: Number(line), end: eol + 2 };
  if (type === '$') {
    const n = Number(line);
    if (n < 0) return { value: null, end: eol + 2 };
    // Lengths are in bytes; the replies read here are ASCII, so characters count the same.
    if (buf.length < eol + 2 + n + 2) return undefined;
    return { value: buf.slice(eol + 2, eol + 2 + n), end: eol + 2 + n + 2 };
  }
  if (type === '*') {
    const n = Number(line);
    if (n < 0) return { value: null, end: eol + 2 };
    const items: unknown[] = [];
    let pos = eol + 2;
    for (let i = 0; i < n; i++) {
      const item = decodeResp(buf, pos);
      if (!item) return undefined;
      items.push(item.value);
      pos = item.end;
    }
    return { value: items, end: pos };
  }
  throw new Error(`unexpected RESP reply: ${JSON.stringify(buf.slice(at, at + 40))}`);
}

/**
 * Sends commands to Redis on `port` on one connection and resolves with their decoded replies, in order (a
 * connection that closes first, as after SHUTDOWN, resolves with what came). An error reply is thrown.
 */
function redisCommands(port: number, commands: Array<Array<string | number>>, host = '127.0.0.1'): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, host);
    let answer = '';
    const replies: unknown[] = [];
    let settled = false;
    const done = (err?: Error) => {
      if (settled) return;
      settled = true;
      s.destroy();
      if (err) reject(err);
      else resolve(replies);
    };
    const encode = (args: Array<string | number>) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join('')}`;
    s.setTimeout(5_000, () => done(new Error(`redis on ${port}: no answer to ${commands.map((c) => c[0]).join(', ')}`)));
    s.on('error', (e) => done(e));
    s.on('close', () => done());
    s.on('connect', () => s.write(commands.map(encode).join('')));
    s.on('data', (d) => {
      answer += d.toString();
      for (;;) {
        const reply = decodeResp(answer);
        if (!reply) return;
        if (reply.value instanceof Error) return done(reply.value);
        replies.push(reply.value);
        answer = answer.slice(reply.end);
        if (replies.length === commands.length) return done();
      }
    });
  });
}

const redisCommand = async (port: number, args: Array<string | number>): Promise<unknown> => (await redisCommands(port, [args]))[0] ?? null;

/** One command to the Redis at `url` (no auth, no TLS): for reading a stream's state, e.g. XPENDING. */
export async function redisCommandAt(url: string, ...args: Array<string | number>): Promise<unknown> {
  const u = new URL(url);
  return (await redisCommands(Number(u.port) || 6379, [args], u.hostname || '127.0.0.1'))[0] ?? null;
}

const pong = (port: number) =>
  redisCommand(port, ['PING']).then(
    (r) => r === 'PONG',
    () => false,
  );

/** A Redis server of its own on a free port: no snapshots, no append-only file (a crash loses everything). */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const exe = redisServer();
  if (!exe) throw new Error('private Redis: no redis-server on the PATH (set REDIS_SERVER)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-private-redis-'));
  const dump = path.join(dir, 'dump.rdb');
  let port = 0;
  let child: ChildProcess | undefined;
  let output = '';

  const launch = async (): Promise<void> => {
    output = '';
    const p = spawn(exe, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    p.stdout?.on('data', (d) => {
      output += d;
    });
    p.stderr?.on('data', (d) => {
      output += d;
    });
    child = p;
    await waitFor(
      async () => {
        if (p.exitCode !== null) throw new Error(`redis-server on ${port} exited with ${p.exitCode}:\n${output}`);
        return pong(port);
      },
      `the private Redis on ${port} to answer PING`,
      15_000,
    );
  };
  const halt = async (mode: 'crash' | 'save'): Promise<void> => {
    const p = child;
    child = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise<void>((r) => p.once('exit', () => r()));
    if (mode === 'save') await redisCommand(port, ['SHUTDOWN', 'SAVE']);
    else p.kill('SIGKILL');
    await gone;
    // Nothing survives a crash of a Redis without persistence, not even a snapshot an earlier `save` left.
    if (mode === 'crash') fs.rmSync(dump, { force: true });
  };

  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (e) {
      await halt('crash');
      if (attempt >= 3) throw e;
    }
  }

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stopServer: halt,
    startServer: launch,
    command: (...args) => redisCommand(port, args),
    atomically: async (...commands) => (await redisCommands(port, [['MULTI'], ...commands, ['EXEC']]))[commands.length + 1] as unknown[],
    async stop() {
      await halt('crash');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fleet a fault test starts itself: on given engines, with what its tests need to kill, restart and audit it. */
export interface FaultFleet {
  fleet: Fleet;
  url: string;
  databaseUrl: string;
  redisUrl: string;
  /** The bus its events travel on. */
  bus: 'redis' | 'kafka';
  /** The Redis Streams key prefix of this fleet's bus (GATEWAY_BUS_PREFIX, one per database). */
  busPrefix: string;
  /** On Kafka: the brokers, and the prefix of its topics and groups (KAFKA_TOPIC_PREFIX, one per database). */
  kafka?: { brokers: string; prefix: string };
  /** SQL on the fleet's database with billing's schema first on the search path (jobs' tables: jobs.jobs). */
  ledger: LedgerAccess['ledger'];
  admin(method: string, p: string, body?: unknown): Promise<{ status: number; json: any }>;
  /** A fresh account with `credits` USD and one key. */
  account(credits: number | string): Promise<{ accountId: string; key: string; keyId: string }>;
  /** SIGKILL one process and wait until it is gone. */
  kill(name: string): Promise<void>;
  /** What one process has logged so far (at the fleet's LOG_LEVEL, warn unless `env` says otherwise). */
  log(name: string): string;
  stop(): Promise<void>;
}

/**
 * startFleet on a fresh database of `postgresUrl`'s server and on `redisUrl`, on free ports (another range when a
 * start fails), every process's log in a temporary directory. `env` reaches every process.
 */
export async function startFaultFleet(
  config: unknown,
  engines: { postgresUrl: string; redisUrl: string; kafkaBrokers?: string },
  env: Record<string, string> = {},
): Promise<FaultFleet> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-fleet-faults-'));
  const configPath = path.join(dir, 'config.json');
  fs.writeFileSync(configPath, JSON.stringify(config));
  const adminToken = `fault-admin-${crypto.randomBytes(8).toString('hex')}`;
  let dbUrl = new URL(engines.postgresUrl);
  const started = await onFleetPorts((port) => {
    dbUrl = new URL(engines.postgresUrl);
    dbUrl.pathname = `/gw_faults_${crypto.randomBytes(6).toString('hex')}`;
    return startFleet({
      port,
      publicUrl: `http://127.0.0.1:${port}`,
      databaseUrl: dbUrl.toString(),
      redisUrl: engines.redisUrl,
      ...(engines.kafkaBrokers ? { bus: 'kafka' as const, kafkaBrokers: engines.kafkaBrokers } : {}),
      configPath,
      adminToken,
      dropDatabaseOnStop: true,
      logDir: dir,
      dataDir: dir,
      env: { LOG_LEVEL: 'warn', ...env },
    });
  }).catch((e: Error) => {
    throw new Error(`the fleet did not start (logs in ${dir}): ${e.message}`);
  });
  const pool = new Pool({ connectionString: dbUrl.toString(), max: 3, options: '-c search_path=billing' });
  // A restarted PostgreSQL drops the pool's idle connections; the pool replaces them, the error is no test's concern.
  pool.on('error', () => undefined);
  const admin = adminClient(started.url, adminToken);
  return {
    fleet: started,
    url: started.url,
    databaseUrl: dbUrl.toString(),
    redisUrl: engines.redisUrl,
    bus: engines.kafkaBrokers ? 'kafka' : 'redis',
    busPrefix: `bus:${dbUrl.pathname.slice(1)}:`,
    ...(engines.kafkaBrokers ? { kafka: { brokers: engines.kafkaBrokers, prefix: `${dbUrl.pathname.slice(1)}.` } } : {}),
    ledger: async (sql, params) => (await pool.query(sql, params as unknown[])).rows,
    admin,
    account: (credits) => openAccount(admin, credits, { label: 'faults' }),
    log: (name) => fs.readFileSync(path.join(dir, `${name}.log`), 'utf8'),
    async kill(name) {
      const p = started.processes[name];
      if (p.exitCode !== null || p.signalCode !== null) return;
      const gone = new Promise<void>((r) => p.once('exit', () => r()));
      p.kill('SIGKILL');
      await gone;
    },
    async stop() {
      await pool.end().catch(() => undefined);
      await started.stop();
      // GW_FAULT_LOGS=keep: every process's log stays for a post-mortem.
      if (process.env.GW_FAULT_LOGS === 'keep') process.stderr.write(`fleet logs kept in ${dir}\n`);
      else fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * An OpenAI-compatible upstream whose answers the test lets go, so calls stay in flight (their holds open) for as
 * long as a fault takes. Every answer is "pong" with usage 3 prompt / 1 completion tokens (a fixed, exact price).
 *   ok         answers at once
 *   gated...   (`gated`, `gated-late`, any name starting so) waits until the gate of that name is open (streamed:
 *              the role and "po" at once, the rest once open)
 *   stall      never answers (streamed: the role and "po", then nothing) until the gateway hangs up
 *   drip       streamed: the role and "po", then " po" every 250 ms until the gateway hangs up (a long answer)
 * Only drip waits on a timer, cleared when its connection closes, so a closed upstream leaves no pending work behind.
 */
export interface GatedUpstream {
  url: string;
  /** Requests received, by upstream model name. */
  received: Record<string, number>;
  /** Requests waiting right now at a gate (`gate`) or anywhere (gated or stalled, their connection still open). */
  waiting(gate?: string): number;
  /** Lets every waiting and later request of the gate answer (default `gated`). */
  open(gate?: string): void;
  /** Later requests of the gate wait again (default: every gate). */
  shut(gate?: string): void;
  close(): Promise<void>;
}

/**
 * A config whose text models (`test/<name>` → upstream model `<name>`, 0.005 a call) are served by the gated
 * upstream, whose timeout never ends a call first; the rate limit is out of the way and the status monitor off.
 */
export function gatedConfig(upstreamUrl: string, names: string[]) {
  return {
    providers: [{ id: 'gated', kind: 'openai', base_url: upstreamUrl, timeout_ms: 300_000 }],
    models: names.map((name) => ({
      id: `test/${name}`,
      name: `test/${name}`,
      category: 'text',
      status: 'available',
      context_length: 4096,
      max_output_tokens: 100,
      pricing: TEXT_PRICE,
      endpoints: [{ provider: 'gated', model: name }],
    })),
    status: { enabled: false },
    limits: { rate_limit: { requests: 100_000, interval: '60s' } },
  };
}

export async function startGatedUpstream(): Promise<GatedUpstream> {
  const received: Record<string, number> = {};
  const gates = new Map<string, { open: boolean; waiters: Set<() => void>; waiting: number }>();
  const gate = (name: string) => {
    let g = gates.get(name);
    if (!g) gates.set(name, (g = { open: false, waiters: new Set(), waiting: 0 }));
    return g;
  };
  let stalled = 0;
  const usage = { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      if (req.url !== '/v1/chat/completions') return void res.writeHead(404).end();
      const body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
      const model = String(body.model);
      received[model] = (received[model] ?? 0) + 1;
      const base = { id: 'chatcmpl-gated', created: Math.floor(Date.now() / 1000), model };
      const frame = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
      const chunk = (delta: unknown, finish: string | null = null) =>
        frame({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] });
      if (body.stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        chunk({ role: 'assistant', content: '' });
        chunk({ content: 'po' });
      }
      const hungUp = new Promise<boolean>((r) => res.once('close', () => r(false)));
      if (model === 'stall' || model === 'drip') {
        const drip = model === 'drip' ? setInterval(() => chunk({ content: ' po' }), 250) : undefined;
        stalled++;
        await hungUp;
        stalled--;
        clearInterval(drip);
        return;
      }
      if (model.startsWith('gated') && !gate(model).open) {
        const g = gate(model);
        g.waiting++;
        const go = await Promise.race([hungUp, new Promise<boolean>((r) => g.waiters.add(() => r(true)))]);
        g.waiting--;
        if (!go || res.destroyed) return;
      }
      if (body.stream) {
        chunk({ content: 'ng' });
        chunk({}, 'stop');
        frame({ ...base, object: 'chat.completion.chunk', choices: [], usage });
        return void res.end('data: [DONE]\n\n');
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: 'pong' }, finish_reason: 'stop' }],
          usage,
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v1`,
    received,
    waiting: (name) => (name === undefined ? stalled + [...gates.values()].reduce((n, g) => n + g.waiting, 0) : gate(name).waiting),
    open(name = 'gated') {
      const g = gate(name);
      g.open = true;
      for (const w of g.waiters) w();
      g.waiters.clear();
    },
    shut(name) {
      for (const [n, g] of gates) if (name === undefined || n === name) g.open = false;
      if (name !== undefined) gate(name).open = false;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
