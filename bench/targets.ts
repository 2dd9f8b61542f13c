/**
 * The peers the bench compares, each started in its own process(es) and pointed at the same zero upstream:
 * direct (the upstream itself), Portkey, the embedded gateway, the fleet.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fleetPorts, startFleet } from 'model-gateway/local-fleet';
import type { TargetName } from './options';
import { freePort, freePortSet, ROOT, spawnNode, stopChild, lineMatching, track, waitFor } from './procs';
import { DIRECT, type Req, type Scenario } from './scenarios';

export interface Target {
  name: TargetName;
  base: string;
  headers: Record<string, string>;
  /** The processes that are the target (their RSS and CPU are its figures); the upstream is never one of them. */
  pids: number[];
  /** What this target is sent for a scenario; undefined when the target has no such route. */
  request(s: Scenario): Promise<Req | undefined>;
  /** A gateway's: whether the bench account still has money held by calls (GET /v1/credits), i.e. settles to apply. */
  holding?(): Promise<boolean>;
  stop(): Promise<void>;
}

export interface Upstream {
  url: string;
  child: ChildProcess;
}

export async function startUpstream(): Promise<Upstream> {
  const child = spawnNode([path.join(ROOT, 'bench', 'zero-upstream.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  return { url: `http://127.0.0.1:${await lineMatching(child)}`, child };
}

/** The gateway's config: the zero upstream as an OpenAI, an Anthropic and a Cohere provider, one model per route. */
export function writeGatewayConfig(dir: string, upstreamUrl: string): string {
  const model = (id: string, category: string, provider: string, extra: Record<string, unknown> = {}) => ({
    id,
    name: id,
    category,
    status: 'available',
    pricing: { prompt: '0.000001', completion: '0.000002' },
    endpoints: [{ provider, model: 'echo' }],
    ...extra,
  });
  const config = {
    providers: [
      { id: 'zero', kind: 'openai', base_url: `${upstreamUrl}/v1`, timeout_ms: 5000 },
      { id: 'zero-anthropic', kind: 'anthropic', base_url: `${upstreamUrl}/v1`, timeout_ms: 5000 },
      { id: 'zero-cohere', kind: 'cohere', base_url: `${upstreamUrl}/v1`, timeout_ms: 5000 },
    ],
    models: [
      model('bench/echo', 'text', 'zero', { context_length: 4096, max_output_tokens: 64 }),
      model('bench/claude', 'text', 'zero-anthropic', { context_length: 4096, max_output_tokens: 64 }),
      model('bench/embed', 'embedding', 'zero'),
      model('bench/rerank', 'rerank', 'zero-cohere'),
      model('bench/image', 'image', 'zero', { pricing: { image: '0.01' } }),
    ],
  };
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify(config));
  return file;
}

export function directTarget(upstream: Upstream): Target {
  return {
    name: 'direct',
    base: upstream.url,
    headers: {},
    pids: [upstream.child.pid!],
    request: async (s) => DIRECT[s.direct],
    stop: async () => {}, // the upstream outlives every target
  };
}

/** Portkey's open-source gateway, headless, through bench/portkey-server.mjs (its start script plus one fix). */
export async function startPortkey(upstreamUrl: string): Promise<Target> {
  const port = await freePort();
  const child = spawnNode([path.join(ROOT, 'bench', 'portkey-server.mjs'), '--headless', `--port=${port}`], {
    cwd: path.join(ROOT, 'bench'),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await lineMatching(child, /^portkey ready$/);
  child.stdout!.resume();
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/`, child);
  return {
    name: 'portkey',
    base,
    // Portkey's own way to reach an OpenAI-compatible host: provider openai, custom host, the caller's key passed on.
    headers: { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${upstreamUrl}/v1`, authorization: 'Bearer sk-bench' },
    pids: [child.pid!],
    request: async (s) => s.portkey,
    stop: () => stopChild(child),
  };
}

/** A funded account with a key for the bench's calls, made through the admin API: its key. */
export async function benchAccount(base: string, adminToken: string): Promise<string> {
  const admin = async (p: string, body: unknown) => {
    const r = await fetch(`${base}${p}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!r.ok) throw new Error(`${p}: ${r.status} ${await r.text()}`);
    return r.json();
  };
  const acct = await admin('/admin/v1/accounts', { credits: 1_000_000, rate_limit: { requests: 100_000_000, interval: '60s' } });
  const key = await admin(`/admin/v1/accounts/${acct.data.account_id}/keys`, { label: 'bench' });
  return key.data.key;
}

/** Our gateway (either mode) behind a bench account with a million dollars and no practical rate limit. */
async function gatewayTarget(name: TargetName, base: string, adminToken: string, pids: number[], stop: () => Promise<void>): Promise<Target> {
  const headers = { authorization: `Bearer ${await benchAccount(base, adminToken)}` };
  let fileReq: Req | undefined;
  return {
    name,
    base,
    headers,
    pids,
    request: async (s) => {
      if (s.gateway !== 'file') return s.gateway;
      // One image generated through the gateway: the /v1/files URL it answered is what the file scenario downloads.
      if (!fileReq) {
        const r = await fetch(`${base}/v1/images/generations`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'bench/image', prompt: 'ping' }),
        });
        fileReq = { method: 'GET', path: new URL((await r.json()).data[0].url).pathname };
      }
      return fileReq;
    },
    holding: async () => {
      const r = await fetch(`${base}/v1/credits`, { headers });
      if (!r.ok) throw new Error(`${name}: GET /v1/credits answered ${r.status}`);
      return ((await r.json()) as { data: { held: number } }).data.held > 0;
    },
    stop,
  };
}

export interface EmbeddedOptions {
  configPath: string;
  adminToken: string;
  dataDir: string;
  logLevel: string;
  /** --cpu-prof into this directory; stopped with SIGINT so the profile is written. */
  profileDir?: string;
  /** The checkout to run (`pnpm bench ab` runs another commit's worktree beside this one); this one by default. */
  root?: string;
}

/**
 * The embedded gateway's node arguments in checkout `root`: its bundle, as `pnpm start` runs it (built first when
 * stale), or its source under tsx with GATEWAY_FROM_SOURCE=1, when profiling (the profile summary maps positions
 * through tsx's compiled files), or for a commit from before scripts/build.js (`pnpm bench ab` against an old one).
 */
export function embeddedArgs(root: string, profiling = false): string[] {
  const build = path.join(root, 'scripts', 'build.js');
  const { v8Flags } = startSettingsOf(root);
  if (process.env.GATEWAY_FROM_SOURCE === '1' || profiling || !fs.existsSync(build))
    return [...v8Flags, '--import', 'tsx', path.join(root, 'services', 'gateway', 'src', 'main.ts')];
  execFileSync(process.execPath, [build, '--if-stale'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  return [...v8Flags, '--enable-source-maps', path.join(root, 'dist', 'gateway.cjs')];
}

/**
 * What `pnpm start` in checkout `root` sets for the embedded gateway (its libs/topology): V8 flags and glibc's malloc
 * tunables. `pnpm bench ab` thus runs another commit as its own start script did; one from before a setting runs
 * without it.
 */
function startSettingsOf(root: string): { v8Flags: string[]; mallocTunables?: string } {
  const file = path.join(root, 'libs', 'topology', 'src', 'commands.ts');
  const settings: { EMBEDDED_V8_FLAGS?: string[]; EMBEDDED_MALLOC_TUNABLES?: string } = fs.existsSync(file) ? require(file) : {};
  return { v8Flags: settings.EMBEDDED_V8_FLAGS ?? [], mallocTunables: settings.EMBEDDED_MALLOC_TUNABLES };
}

/** What package.json's start script in checkout `root` adds to the embedded gateway's environment (startSettingsOf). */
export const embeddedEnv = (root = ROOT): NodeJS.ProcessEnv => ({
  GLIBC_TUNABLES: [process.env.GLIBC_TUNABLES, startSettingsOf(root).mallocTunables].filter(Boolean).join(':'),
});

/** `pnpm start` as a user runs it (embeddedArgs: the bundle, PGlite on disk), on a free port. */
export async function startEmbedded(o: EmbeddedOptions): Promise<Target> {
  const port = await freePortSet((p) => [p, p + 1000]);
  const profile = o.profileDir
    ? // tsx keeps each file it compiles (with its source map) under TMPDIR; a directory of this run's own lets the
      // profile summary map V8's positions in the compiled code back to .ts lines.
      { args: ['--cpu-prof', '--cpu-prof-dir', o.profileDir], env: { TMPDIR: path.join(o.profileDir, 'tmp') } }
    : { args: [], env: {} };
  if (o.profileDir) fs.mkdirSync(profile.env.TMPDIR!, { recursive: true });
  const root = o.root ?? ROOT;
  const child = spawnNode([...profile.args, ...embeddedArgs(root, !!o.profileDir)], {
    cwd: root,
    env: {
      ...process.env,
      ...profile.env,
      PORT: String(port),
      METRICS_PORT: String(port + 1000),
      GATEWAY_CONFIG: o.configPath,
      GATEWAY_ADMIN_TOKEN: o.adminToken,
      GATEWAY_DATA_DIR: o.dataDir,
      ...embeddedEnv(root),
      LOG_LEVEL: o.logLevel,
      DATABASE_URL: '',
      REDIS_URL: '',
      BUS: '',
    },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(`${base}/v1/models`, child);
  // SIGINT and SIGTERM both drain and exit through process.exit(0) (service-kit's runMain), which writes the profile.
  return gatewayTarget('embedded', base, o.adminToken, [child.pid!], () => stopChild(child, o.profileDir ? 'SIGINT' : 'SIGTERM', 60_000));
}

/** `pnpm fleet`: the edge and every service as separate processes on PostgreSQL and Redis, on a throwaway database. */
export async function startFleetTarget(o: {
  configPath: string;
  adminToken: string;
  logDir: string;
  dataDir: string;
  logLevel: string;
  /** Profile every process's main thread into <profileDir>/<service>/ (bench/cpu-profile-hook.mjs). */
  profileDir?: string;
  /** The fleet's bus (default redis). Kafka: KAFKA_BROKERS, or a broker the fleet starts under dataDir and stops. */
  bus?: 'redis' | 'kafka';
  /** The checkout whose deploy/local-fleet.ts starts the fleet (`pnpm bench ab` runs another commit's); this one by default. */
  root?: string;
}): Promise<Target> {
  const port = await freePortSet(fleetPorts);
  const kafka =
    o.bus === 'kafka'
      ? {
          bus: 'kafka' as const,
          kafkaBrokers: process.env.KAFKA_BROKERS || undefined,
          kafkaPort: await freePortSet((p) => [p, p + 1]),
        }
      : {};
  const profile = o.profileDir
    ? {
        // NODE_OPTIONS refuses --cpu-prof; the hook does the same from inside. TMPDIR as for the embedded profile.
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import="${path.join(ROOT, 'bench', 'cpu-profile-hook.mjs')}"`.trim(),
        CPU_PROFILE_DIR: o.profileDir,
        TMPDIR: path.join(o.profileDir, 'tmp'),
      }
    : undefined;
  if (profile) fs.mkdirSync(profile.TMPDIR, { recursive: true });
  const start: typeof startFleet = o.root
    ? ((await import(path.join(o.root, 'deploy', 'local-fleet.ts'))) as { startFleet: typeof startFleet }).startFleet
    : startFleet;
  const fleet = await start({
    port,
    configPath: o.configPath,
    adminToken: o.adminToken,
    databaseUrl: `postgres://postgres@127.0.0.1:5432/gw_bench_${crypto.randomBytes(4).toString('hex')}`,
    dropDatabaseOnStop: true,
    logDir: o.logDir,
    dataDir: o.dataDir,
    logLevel: o.logLevel as 'warn',
    env: profile,
    // Profiles are summarised through tsx's compiled files, so a profiled fleet runs its source.
    ...(profile ? { from: 'source' as const } : {}),
    ...kafka,
  });
  for (const p of Object.values(fleet.processes)) track(p);
  // A broker the fleet started for the run is part of what it costs; a cluster it was pointed at is not, as Redis is not.
  const pids = [...Object.values(fleet.processes).map((p) => p.pid!), ...(fleet.kafka?.pid ? [fleet.kafka.pid] : [])];
  return gatewayTarget(o.bus === 'kafka' ? 'fleet-kafka' : 'fleet', fleet.url, o.adminToken, pids, () => fleet.stop());
}
