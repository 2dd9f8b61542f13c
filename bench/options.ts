/** What one `pnpm bench` run measures, read once from the command line and the environment. */
import os from 'node:os';

export const TARGETS = ['direct', 'portkey', 'embedded', 'fleet', 'fleet-kafka'] as const;
export type TargetName = (typeof TARGETS)[number];

export interface BenchOptions {
  /** Seconds per non-streamed chat figure (BENCH_SECONDS, 10). */
  seconds: number;
  /** Seconds per figure of every other scenario, streamed chat included (BENCH_ROUTE_SECONDS, 5). */
  routeSeconds: number;
  /** Seconds of load before each scenario's figures on each target, at its largest connection count (BENCH_WARMUP, 2; 0 skips). */
  warmupSeconds: number;
  /** The high connection count (BENCH_CONNECTIONS, 50); the main scenarios also run at 1. */
  connections: number;
  /** How many times each figure is taken, the targets in turns (BENCH_ROUNDS, 1); the round with the median req/s is reported. */
  rounds: number;
  /** Scenario names (BENCH_ROUTES); default chat, chat-stream, embeddings. */
  routes: string[];
  /** Targets in run order (BENCH_TARGETS); BENCH_SKIP_FLEET=1 removes both fleets, BENCH_SKIP_KAFKA=1 the one on Kafka, BENCH_SKIP_PORTKEY=1 Portkey. */
  targets: TargetName[];
  /** LOG_LEVEL of the gateway processes (BENCH_LOG_LEVEL, info: what `pnpm start` runs; warn measured the same). */
  logLevel: string;
  /** Where the embedded gateway's data directory is created (BENCH_DATA_ROOT, the OS temporary directory). */
  dataRoot: string;
  /** Run autocannon inside this process instead of a child (BENCH_LOAD_IN_PROCESS=1): the old harness, for comparison only. */
  loadInProcess: boolean;
  /** BENCH_STARTUP=1: the comparison run starts with `pnpm bench startup`'s figures (bench/startup.ts), taken before any target is up. */
  startup: boolean;
  /** `--profile` or BENCH_PROFILE=1: profile the embedded gateway instead of the comparison run. */
  profile: boolean;
  /** Where the profile files go (BENCH_PROFILE_DIR; default a new directory under the OS temporary directory). */
  profileDir?: string;
}

export const DEFAULT_ROUTES = ['chat', 'chat-stream', 'embeddings'];

export function readOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const num = (name: string, dflt: number) => {
    const v = env[name];
    if (v === undefined || v === '') return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${v} is not a number`);
    return n;
  };
  const list = (v: string | undefined) =>
    v
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  const flag = (name: string) => env[name] !== undefined && env[name] !== '' && env[name] !== '0';
  const profile = argv.includes('--profile') || flag('BENCH_PROFILE');
  let targets = (list(env.BENCH_TARGETS) ?? [...TARGETS]) as TargetName[];
  for (const t of targets) if (!TARGETS.includes(t)) throw new Error(`BENCH_TARGETS: unknown target ${t} (known: ${TARGETS.join(', ')})`);
  if (flag('BENCH_SKIP_FLEET')) targets = targets.filter((t) => t !== 'fleet' && t !== 'fleet-kafka');
  if (flag('BENCH_SKIP_KAFKA')) targets = targets.filter((t) => t !== 'fleet-kafka');
  if (flag('BENCH_SKIP_PORTKEY')) targets = targets.filter((t) => t !== 'portkey');
  return {
    seconds: num('BENCH_SECONDS', 10),
    routeSeconds: num('BENCH_ROUTE_SECONDS', 5),
    warmupSeconds: num('BENCH_WARMUP', 2),
    connections: num('BENCH_CONNECTIONS', 50),
    rounds: Math.max(1, Math.round(num('BENCH_ROUNDS', 1))),
    routes: list(env.BENCH_ROUTES) ?? (profile ? ['chat'] : DEFAULT_ROUTES),
    targets: TARGETS.filter((t) => targets.includes(t)),
    logLevel: env.BENCH_LOG_LEVEL || 'info',
    dataRoot: env.BENCH_DATA_ROOT || os.tmpdir(),
    loadInProcess: flag('BENCH_LOAD_IN_PROCESS'),
    startup: flag('BENCH_STARTUP'),
    profile,
    profileDir: env.BENCH_PROFILE_DIR || undefined,
  };
}
