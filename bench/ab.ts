/**
 * `pnpm bench ab [rev]`: this checkout's embedded gateway (or, with BENCH_TARGETS=fleet, its fleet on PostgreSQL and
 * Redis Streams, or with BENCH_TARGETS=fleet-kafka on Kafka, each started by its own checkout's deploy/local-fleet.ts)
 * against another commit's (HEAD by default: what the uncommitted change does), with Portkey beside them, all three
 * measured in turns, round after round, in front of one upstream. On a shared machine whose speed drifts by tens of
 * per cent within minutes, a run of one target after another mostly measures the drift; turns spread it over every
 * target alike, and the medians of the rounds are read side by side. The other commit runs from a git worktree with
 * its own `pnpm install --offline`.
 *
 * Per round and target: chat (or the first of BENCH_ROUTES) at BENCH_CONNECTIONS (req/s, and the gateway's CPU per
 * request, which drifts less than the rate) and at one connection (p50 latency, for a stream its first byte's, added
 * over the direct upstream measured in the same round).
 */
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { LoadResult, LoadSpec } from './load';
import { loadUntilSettled, runLoad, verifyTarget } from './measure';
import type { BenchOptions } from './options';
import { cpuTimes, ProcSampler, ROOT, stealPct, stopChild } from './procs';
import { median } from './stats';
import { SCENARIOS } from './scenarios';
import { directTarget, startEmbedded, startFleetTarget, startPortkey, startUpstream, writeGatewayConfig, type Target } from './targets';

interface Turn {
  rps: number;
  cpuUsPerRequest: number;
  p50c1: number;
}

function worktreeOf(rev: string, dir: string, log: (line: string) => void): { root: string; commit: string } {
  const commit = execFileSync('git', ['rev-parse', '--short', rev], { cwd: ROOT, encoding: 'utf8' }).trim();
  const root = path.join(dir, `base-${commit}`);
  log(`worktree of ${commit} in ${root}, installing its dependencies offline`);
  execFileSync('git', ['worktree', 'add', '--detach', root, commit], { cwd: ROOT, stdio: 'ignore' });
  execFileSync('pnpm', ['install', '--offline', '--frozen-lockfile', '--silent'], { cwd: root, stdio: 'ignore' });
  return { root, commit };
}

export async function benchAb(opts: BenchOptions, rev: string, log: (line: string) => void): Promise<string> {
  const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 5);
  const dir = fs.mkdtempSync(path.join(opts.dataRoot, 'gw-bench-ab-'));
  const base = worktreeOf(rev, dir, log);
  const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
  const thisLabel = `this checkout (${head}${dirty ? ' + uncommitted' : ''})`;
  const upstream = await startUpstream();
  const configPath = writeGatewayConfig(dir, upstream.url);
  const adminToken = `bench-${crypto.randomBytes(8).toString('hex')}`;
  const name = opts.routes[0] ?? 'chat';
  const chat = SCENARIOS.find((s) => s.name === name);
  if (!chat) throw new Error(`BENCH_ROUTES: unknown scenario ${name}`);
  const load = (spec: LoadSpec) => runLoad(spec, chat.stream, opts);
  // For a stream, the latency that counts at one connection is the first byte's.
  const p50Of = (r: LoadResult) => (chat.stream ? r.ttfb!.p50 : r.latency.p50);
  const targets: { label: string; target: Target }[] = [];
  try {
    // The fleet when it is asked for without the embedded gateway (BENCH_TARGETS=fleet, or fleet-kafka for its events on
    // Kafka), the embedded gateway otherwise.
    const bus = opts.targets.includes('fleet-kafka') && !opts.targets.includes('fleet') ? 'kafka' : 'redis';
    const fleet = (opts.targets.includes('fleet') || bus === 'kafka') && !opts.targets.includes('embedded');
    const start = async (root: string, name: string) => {
      if (!fleet) return startEmbedded({ configPath, adminToken, dataDir: path.join(dir, `data-${name}`), logLevel: opts.logLevel, root });
      const logDir = path.join(dir, `logs-${name}`);
      fs.mkdirSync(logDir, { recursive: true });
      return startFleetTarget({ configPath, adminToken, logDir, dataDir: path.join(dir, `data-${name}`), logLevel: opts.logLevel, root, bus });
    };
    targets.push({ label: `base (${base.commit})`, target: await start(base.root, 'base') });
    targets.push({ label: thisLabel, target: await start(ROOT, 'this') });
    if (opts.targets.includes('portkey')) targets.push({ label: 'portkey', target: await startPortkey(upstream.url) });
    const direct = directTarget(upstream);
    for (const t of [...targets, { label: 'direct', target: direct }]) await verifyTarget(t.target, [chat]);

    const spec = async (t: Target, connections: number, seconds: number): Promise<LoadSpec> => {
      const req = (await t.request(chat))!;
      return {
        url: `${t.base}${req.path}`,
        method: req.method,
        body: JSON.stringify(req.body),
        headers: { 'content-type': 'application/json', ...t.headers },
        connections,
        seconds,
      };
    };
    for (const t of targets) await load(await spec(t.target, opts.connections, opts.warmupSeconds || 2));
    const turns = new Map<string, Turn[]>(targets.map((t) => [t.label, []]));
    const directP50: number[] = [];
    const machine = cpuTimes();
    for (let round = 0; round < rounds; round++) {
      // Every round in another order, so no target always follows the same one.
      const order = targets.map((_, i) => targets[(i + round) % targets.length]);
      const d = await load(await spec(direct, 1, 3));
      directP50.push(p50Of(d));
      for (const t of order) {
        const cpu = new ProcSampler(t.target.pids).start();
        const high = await loadUntilSettled(t.target, await spec(t.target, opts.connections, opts.routeSeconds), chat.stream, opts);
        const used = cpu.stop();
        const low = await load(await spec(t.target, 1, 3));
        const added = p50Of(low) - p50Of(d);
        turns.get(t.label)!.push({ rps: high.rps, cpuUsPerRequest: (used.cpuMs * 1000) / high.requests, p50c1: added });
        log(
          `round ${round + 1}/${rounds} ${t.label}: ${Math.round(high.rps)} req/s` +
            `${high.settledAfterMs ? ` (settled ${(high.settledAfterMs / 1000).toFixed(1)} s after the last answer, counted)` : ''}, +${added.toFixed(2)} ms at c=1`,
        );
      }
    }
    const rows = targets.map((t) => {
      const ts = turns.get(t.label)!;
      return {
        label: t.label,
        rps: median(ts.map((x) => x.rps)),
        cpu: median(ts.map((x) => x.cpuUsPerRequest)),
        added: median(ts.map((x) => x.p50c1)),
        all: ts.map((x) => Math.round(x.rps)).join(', '),
      };
    });
    const pk = rows.find((r) => r.label === 'portkey');
    const [a, b] = rows;
    return [
      '',
      `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; ${rounds} rounds of ${chat.name} at c=${opts.connections} (${opts.routeSeconds} s) and c=1 (3 s), targets in turns; medians`,
      '',
      `| target | req/s at c=${opts.connections} | CPU µs per request | added p50 ms at c=1${chat.stream ? ' (first byte)' : ''} | ÷ Portkey req/s | req/s each round |`,
      '|---|---|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.label} | ${Math.round(r.rps)} | ${r.label === 'portkey' ? '' : Math.round(r.cpu)} | +${r.added.toFixed(2)} | ${pk ? (r.rps / pk.rps).toFixed(2) : ''} | ${r.all} |`,
      ),
      '',
      `this ÷ base: req/s ${(b.rps / a.rps).toFixed(3)}, CPU per request ${(b.cpu / a.cpu).toFixed(3)}, added at c=1 ${(b.added / a.added).toFixed(3)}; direct p50 at c=1 ${median(directP50).toFixed(2)} ms; hypervisor steal ${stealPct(machine, cpuTimes()).toFixed(0)} % of the CPU time over the rounds`,
      '',
    ].join('\n');
  } finally {
    await Promise.all(targets.map((t) => t.target.stop()));
    await stopChild(upstream.child);
    execFileSync('git', ['worktree', 'remove', '--force', base.root], { cwd: ROOT, stdio: 'ignore' });
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
