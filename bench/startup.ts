/**
 * `pnpm bench startup`: what the embedded gateway (`pnpm start`) costs around the hot path. Each run starts it on an
 * empty GATEWAY_DATA_DIR (first start: time until /readyz answers 200), leaves it idle (RSS 10 s after ready, then its
 * CPU over 30 s, from /proc/<pid>/stat), stops it, starts it again on the same data (restart: time to ready), and
 * loads it with non-streamed chat at BENCH_CONNECTIONS (50) for BENCH_SECONDS (10) to read its peak RSS.
 * BENCH_STARTUP_RUNS (1) repeats the whole and reports each run and the median. The zero upstream is the one the
 * comparison uses; the load generator is bench/load.ts in its own process.
 *
 * Then, unless BENCH_STARTUP_BUSY=0, a start on a busy machine: one process spinning on every core (load average at
 * the core count, the gateway's threads sharing each core with one that never sleeps), a first start on an empty data
 * directory and a restart on it, beside the idle runs' medians (issue 36: at most 3x slower than idle).
 *
 * Then, unless BENCH_SKIP_FLEET=1, the local fleet (`pnpm fleet`, Redis Streams) on a throwaway database: each
 * process's RSS 10 s after the fleet is ready. Both run what the package scripts run, the bundles of dist/, or the
 * TypeScript under tsx with GATEWAY_FROM_SOURCE=1: the two in one session compare the two ways of running.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fleetPorts, startFleet } from 'model-gateway/local-fleet';
import type { LoadResult, LoadSpec } from './load';
import type { BenchOptions } from './options';
import { cpuMs, freePortSet, ProcSampler, ROOT, rssKb, runJsonChild, spawnNode, stopChild } from './procs';
import { median } from './stats';
import { SCENARIOS } from './scenarios';
import { benchAccount, embeddedArgs, embeddedEnv, startUpstream, writeGatewayConfig } from './targets';

const IDLE_SETTLE_MS = 10_000;
const IDLE_CPU_MS = 30_000;
const READY_POLL_MS = 25;

export interface StartupRun {
  firstReadyMs: number;
  idleRssMiB: number;
  /** % of one core over IDLE_CPU_MS, after the settle. */
  idleCpuPct: number;
  restartReadyMs: number;
  /** RSS 10 s after the restart was ready, before any call: the figure a gateway that runs for days starts from. */
  restartIdleRssMiB: number;
  /** Highest RSS from the restart through the chat load. */
  chatPeakRssMiB: number;
  chatRps: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Started {
  child: ReturnType<typeof spawnNode>;
  base: string;
  readyMs: number;
}

/** `pnpm start` as a user runs it; resolves once /readyz on the probes' listener answers 200. */
async function startGateway(env: NodeJS.ProcessEnv): Promise<Started> {
  const port = await freePortSet((p) => [p, p + 1000]);
  const t0 = performance.now();
  const child = spawnNode(embeddedArgs(ROOT), {
    env: { ...env, ...embeddedEnv(), PORT: String(port), METRICS_PORT: String(port + 1000) },
  });
  const ready = `http://127.0.0.1:${port + 1000}/readyz`;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited ${child.exitCode} before it was ready`);
    if (performance.now() - t0 > 180_000) throw new Error('the gateway was not ready within 180 s');
    try {
      if ((await fetch(ready)).status === 200) break;
    } catch {
      /* not listening yet */
    }
    await sleep(READY_POLL_MS);
  }
  return { child, base: `http://127.0.0.1:${port}`, readyMs: performance.now() - t0 };
}

async function oneRun(opts: BenchOptions, env: NodeJS.ProcessEnv, log: (l: string) => void): Promise<StartupRun> {
  const first = await startGateway(env);
  const pid = first.child.pid!;
  log(`first start ready in ${Math.round(first.readyMs)} ms; idle ${IDLE_SETTLE_MS / 1000} s, then CPU over ${IDLE_CPU_MS / 1000} s`);
  await sleep(IDLE_SETTLE_MS);
  const idleRssMiB = rssKb(pid) / 1024;
  const cpu0 = cpuMs(pid);
  await sleep(IDLE_CPU_MS);
  const idleCpuPct = ((cpuMs(pid) - cpu0) / IDLE_CPU_MS) * 100;
  await stopChild(first.child, 'SIGTERM', 60_000);

  const again = await startGateway(env);
  log(`restart ready in ${Math.round(again.readyMs)} ms; chat at ${opts.connections} connections for ${opts.seconds} s`);
  const sampler = new ProcSampler([again.child.pid!]).start();
  try {
    await sleep(IDLE_SETTLE_MS);
    const restartIdleRssMiB = rssKb(again.child.pid!) / 1024;
    const key = await benchAccount(again.base, env.GATEWAY_ADMIN_TOKEN!);
    const chat = SCENARIOS.find((s) => s.name === 'chat')!.gateway as { method: 'POST'; path: string; body: unknown };
    const load = await runJsonChild<LoadResult>('load.ts', {
      url: `${again.base}${chat.path}`,
      method: chat.method,
      body: JSON.stringify(chat.body),
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      connections: opts.connections,
      seconds: opts.seconds,
    } satisfies LoadSpec);
    if (load.non2xx || load.errors) throw new Error(`chat load: ${load.non2xx} non-2xx, ${load.errors} errors`);
    return {
      firstReadyMs: first.readyMs,
      idleRssMiB,
      idleCpuPct,
      restartReadyMs: again.readyMs,
      restartIdleRssMiB,
      chatPeakRssMiB: sampler.stop().maxRssMiB,
      chatRps: load.rps,
    };
  } finally {
    sampler.stop();
    await stopChild(again.child, 'SIGTERM', 60_000);
  }
}

export function startupTable(runs: StartupRun[]): string {
  const cols: [string, (r: StartupRun) => string][] = [
    ['first start to ready (s)', (r) => (r.firstReadyMs / 1000).toFixed(2)],
    ['restart to ready (s)', (r) => (r.restartReadyMs / 1000).toFixed(2)],
    ['RSS idle 10 s after ready (MiB)', (r) => r.idleRssMiB.toFixed(0)],
    ['RSS idle 10 s after restart (MiB)', (r) => r.restartIdleRssMiB.toFixed(0)],
    ['idle CPU over 30 s (% of a core)', (r) => r.idleCpuPct.toFixed(2)],
    ['RSS peak, restart + chat c=N (MiB)', (r) => r.chatPeakRssMiB.toFixed(0)],
    ['chat req/s', (r) => r.chatRps.toFixed(0)],
  ];
  const keys = Object.keys(runs[0]) as (keyof StartupRun)[];
  const med = Object.fromEntries(keys.map((k) => [k, median(runs.map((r) => r[k]))])) as unknown as StartupRun;
  const rows = runs.length > 1 ? [...runs.map((r, i) => [`run ${i + 1}`, r] as const), ['median', med] as const] : [['embedded', med] as const];
  return [
    `| | ${cols.map((c) => c[0]).join(' | ')} |`,
    `|---|${cols.map(() => '---:').join('|')}|`,
    ...rows.map(([name, r]) => `| ${name} | ${cols.map((c) => c[1](r)).join(' | ')} |`),
  ].join('\n');
}

interface BusyStart {
  spinners: number;
  firstReadyMs: number;
  restartReadyMs: number;
}

/** A first start and a restart while `os.cpus().length` processes spin, one per core, at the gateway's own priority. */
async function busyStart(env: NodeJS.ProcessEnv, log: (l: string) => void): Promise<BusyStart> {
  const spinners = os.cpus().length;
  const spinning = Array.from({ length: spinners }, () => spawnNode(['-e', 'for (;;);'], { stdio: 'ignore' }));
  try {
    await sleep(1_000);
    const first = await startGateway(env);
    await stopChild(first.child, 'SIGTERM', 60_000);
    const again = await startGateway(env);
    await stopChild(again.child, 'SIGTERM', 60_000);
    log(`busy machine (${spinners} spinning): first start ready in ${Math.round(first.readyMs)} ms, restart in ${Math.round(again.readyMs)} ms`);
    return { spinners, firstReadyMs: first.readyMs, restartReadyMs: again.readyMs };
  } finally {
    for (const c of spinning) c.kill('SIGKILL');
  }
}

export function busyStartTable(busy: BusyStart, idle: StartupRun[]): string {
  const firstIdle = median(idle.map((r) => r.firstReadyMs));
  const restartIdle = median(idle.map((r) => r.restartReadyMs));
  const cell = (busyMs: number, idleMs: number) => `${(busyMs / 1000).toFixed(2)} s (${(busyMs / idleMs).toFixed(2)}× idle)`;
  return [
    `| busy machine: ${busy.spinners} processes spinning | first start to ready | restart to ready |`,
    '|---|---:|---:|',
    `| embedded | ${cell(busy.firstReadyMs, firstIdle)} | ${cell(busy.restartReadyMs, restartIdle)} |`,
  ].join('\n');
}

/** The fleet's processes' RSS (MiB) IDLE_SETTLE_MS after it is ready, by process, and the fleet's start time. */
async function fleetIdle(configPath: string, dir: string, log: (l: string) => void): Promise<{ readyMs: number; rssMiB: Record<string, number> }> {
  const port = await freePortSet(fleetPorts);
  const t0 = performance.now();
  const fleet = await startFleet({
    port,
    configPath,
    adminToken: `bench-${crypto.randomBytes(8).toString('hex')}`,
    databaseUrl: `postgres://postgres@127.0.0.1:5432/gw_bench_${crypto.randomBytes(4).toString('hex')}`,
    dropDatabaseOnStop: true,
    logDir: dir,
    dataDir: path.join(dir, 'fleet-data'),
    logLevel: 'warn',
  });
  const readyMs = performance.now() - t0;
  try {
    log(`fleet ready in ${Math.round(readyMs)} ms; idle ${IDLE_SETTLE_MS / 1000} s`);
    await sleep(IDLE_SETTLE_MS);
    return { readyMs, rssMiB: Object.fromEntries(Object.entries(fleet.processes).map(([name, p]) => [name, rssKb(p.pid!) / 1024])) };
  } finally {
    await fleet.stop();
  }
}

export function fleetIdleTable(f: { readyMs: number; rssMiB: Record<string, number> }): string {
  const names = Object.keys(f.rssMiB);
  const total = names.reduce((a, n) => a + f.rssMiB[n], 0);
  return [
    `| fleet ready (s) | ${names.map((n) => `${n} (MiB)`).join(' | ')} | total (MiB) |`,
    `|---:|${names.map(() => '---:').join('|')}|---:|`,
    `| ${(f.readyMs / 1000).toFixed(2)} | ${names.map((n) => f.rssMiB[n].toFixed(0)).join(' | ')} | ${total.toFixed(0)} |`,
  ].join('\n');
}

export async function benchStartup(opts: BenchOptions, log: (l: string) => void): Promise<string> {
  const runs = Math.max(1, Math.round(Number(process.env.BENCH_STARTUP_RUNS || 1)));
  const dir = fs.mkdtempSync(path.join(opts.dataRoot, 'gw-startup-'));
  const upstream = await startUpstream();
  const loadAvg = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  const before = loadAvg();
  try {
    const envFor = (dataDir: string): NodeJS.ProcessEnv => ({
      ...process.env,
      GATEWAY_CONFIG: writeGatewayConfig(dir, upstream.url),
      GATEWAY_ADMIN_TOKEN: `bench-${crypto.randomBytes(8).toString('hex')}`,
      GATEWAY_DATA_DIR: dataDir,
      LOG_LEVEL: opts.logLevel,
      DATABASE_URL: '',
      REDIS_URL: '',
      BUS: '',
    });
    const results: StartupRun[] = [];
    for (let i = 0; i < runs; i++) {
      log(`start-up run ${i + 1} of ${runs}`);
      results.push(await oneRun(opts, envFor(path.join(dir, `data-${i}`)), log));
    }
    const busy = process.env.BENCH_STARTUP_BUSY === '0' ? undefined : await busyStart(envFor(path.join(dir, 'data-busy')), log);
    const fleet = process.env.BENCH_SKIP_FLEET === '1' ? undefined : await fleetIdle(writeGatewayConfig(dir, upstream.url), dir, log);
    const from = process.env.GATEWAY_FROM_SOURCE === '1' ? 'TypeScript under tsx (GATEWAY_FROM_SOURCE=1)' : 'the bundles of dist/';
    return [
      '',
      `Start-up (embedded, \`pnpm bench startup\`, ${from}): ${os.cpus().length} cores, Node ${process.version}, load average ${before} before, ${loadAvg()} after; chat c=${opts.connections} for ${opts.seconds} s`,
      '',
      startupTable(results),
      ...(busy ? ['', busyStartTable(busy, results)] : []),
      ...(fleet ? ['', `Fleet (Redis Streams), each process's RSS ${IDLE_SETTLE_MS / 1000} s after ready:`, '', fleetIdleTable(fleet)] : []),
      '',
    ].join('\n');
  } finally {
    await stopChild(upstream.child);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
