/**
 * `pnpm bench --profile`: the embedded gateway under node's --cpu-prof, driven by the selected scenarios (default
 * chat) at BENCH_CONNECTIONS for their usual seconds after a warm-up, then stopped with SIGINT: service-kit's runMain
 * drains and leaves through process.exit(0), and node writes one .cpuprofile per thread on that exit. With
 * BENCH_TARGETS=fleet, the fleet instead: every process's main thread through bench/cpu-profile-hook.mjs (NODE_OPTIONS
 * refuses --cpu-prof), one folder per service, stopped with SIGTERM; BENCH_TARGETS=fleet-kafka, the fleet on Kafka
 * (KAFKA_BROKERS, or a broker of its own). The summary (bench/profile-summary.ts) keeps only
 * the samples inside the measured runs' windows. The files stay on disk.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runLoad, verifyTarget } from './measure';
import type { BenchOptions } from './options';
import { findTsxCaches, summarizeFiles } from './profile-summary';
import { selectScenarios, secondsOf } from './scenarios';
import { startEmbedded, startFleetTarget, type Target } from './targets';

const profilesIn = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.cpuprofile'))
    .map((n) => path.join(dir, n));

export async function profileGateway(
  opts: BenchOptions,
  gw: { configPath: string; adminToken: string; dataDir: string; workDir: string },
  log: (line: string) => void,
): Promise<string> {
  const onKafka = opts.targets.includes('fleet-kafka');
  const fleet = (opts.targets.includes('fleet') || onKafka) && !opts.targets.includes('embedded');
  const profileDir = opts.profileDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'gw-bench-profile-'));
  fs.mkdirSync(profileDir, { recursive: true });
  const { configPath, adminToken, dataDir, workDir } = gw;
  const target = fleet
    ? await startFleetTarget({
        configPath,
        adminToken,
        logDir: workDir,
        dataDir: path.join(workDir, 'fleet-data'),
        logLevel: opts.logLevel,
        profileDir,
        ...(onKafka ? { bus: 'kafka' as const } : {}),
      })
    : await startEmbedded({ configPath, adminToken, dataDir, logLevel: opts.logLevel, profileDir });
  const { lines, fromUs, toUs } = await drive(target, opts, log);
  const intro = (what: string) => [
    '',
    `Profile of ${what}, files in ${profileDir}`,
    `(open one in Chrome DevTools, or: npx tsx bench/profile-summary.ts ${profileDir}${fleet ? '/<service>' : ''} --from ${fromUs} --to ${toUs})`,
    '',
    ...lines,
    '',
  ];
  if (!fleet) {
    const files = profilesIn(profileDir);
    if (!files.length) throw new Error(`the gateway wrote no .cpuprofile into ${profileDir}`);
    return [...intro('the embedded gateway (node --cpu-prof)'), summarizeFiles(files, { fromUs, toUs }), ''].join('\n');
  }
  // Every service compiled into the one tsx cache under <profileDir>/tmp.
  const maps = findTsxCaches(profileDir).dirs;
  const services = fs.readdirSync(profileDir).filter((n) => n !== 'tmp' && fs.statSync(path.join(profileDir, n)).isDirectory());
  if (!services.length) throw new Error(`the fleet wrote no .cpuprofile under ${profileDir}`);
  const sections = services
    .sort()
    .map((name) => [`## ${name}`, '', summarizeFiles(profilesIn(path.join(profileDir, name)), { fromUs, toUs, maps, top: 15 }), ''].join('\n'));
  return [...intro("the fleet (every process's main thread)"), ...sections].join('\n');
}

/** The selected scenarios after a warm-up each; the measured window spans them all. */
async function drive(target: Target, opts: BenchOptions, log: (line: string) => void): Promise<{ lines: string[]; fromUs: number; toUs: number }> {
  const lines: string[] = [];
  let fromUs = Infinity;
  let toUs = -Infinity;
  try {
    const scenarios = selectScenarios(opts);
    await verifyTarget(target, scenarios);
    for (const s of scenarios) {
      const req = (await target.request(s))!;
      const spec = (seconds: number) => ({
        url: `${target.base}${req.path}`,
        method: req.method,
        body: req.body === undefined ? undefined : JSON.stringify(req.body),
        headers: { ...(req.body === undefined ? {} : { 'content-type': 'application/json' }), ...target.headers },
        connections: opts.connections,
        seconds,
      });
      if (opts.warmupSeconds > 0) await runLoad(spec(opts.warmupSeconds), s.stream, opts);
      const r = await runLoad(spec(secondsOf(s, opts)), s.stream, opts);
      fromUs = Math.min(fromUs, r.window.fromUs);
      toUs = Math.max(toUs, r.window.toUs);
      const l = r.ttfb ?? r.latency;
      lines.push(
        `- ${s.name} at c=${opts.connections} under the profiler: ${Math.round(r.rps)} req/s, p50 ${l.p50.toFixed(2)} ms, ` +
          `p99 ${l.p99.toFixed(2)} ms, ${r.errors + r.non2xx} errors + non-2xx`,
      );
      log(lines[lines.length - 1].slice(2));
    }
  } finally {
    await target.stop();
  }
  return { lines, fromUs, toUs };
}
