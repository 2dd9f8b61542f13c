/** The run's figures as markdown: the machine line, one table for answers, one for streams, the ratio block. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import type { LoadResult } from './load';
import type { BenchOptions, TargetName } from './options';
import type { ProcUsage } from './procs';
import type { DirectKind } from './scenarios';

export interface Row {
  scenario: string;
  direct: DirectKind;
  stream: boolean;
  target: TargetName;
  connections: number;
  load: LoadResult;
  /** The target's own processes. */
  usage: ProcUsage;
  /** The upstream's CPU time during the run (the direct target's is its usage). */
  upstreamCpuMs: number;
  /** CPU time the other, waiting targets used during the run (every target stays up for the whole bench). */
  idleCpuMs?: number;
  /** CPU time the hypervisor took from this machine during the run, % of all CPUs (procs.ts stealPct). */
  stealPct: number;
  /** Every round's req/s, in the order taken (BENCH_ROUNDS); the row's other figures are the median round's. */
  roundsRps?: number[];
}

const ms = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '–' : v.toFixed(2));
const signed = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '–' : `${v >= 0 ? '+' : ''}${v.toFixed(2)}`);
const pct = (cpuMs: number, seconds: number) => Math.round((cpuMs / (seconds * 1000)) * 100);

/** The direct row a gateway row is compared with: the same upstream call at the same connection count. */
function directOf(rows: Row[], r: Row): Row | undefined {
  if (r.target === 'direct') return undefined;
  return rows.find((d) => d.target === 'direct' && d.scenario === r.direct && d.connections === r.connections);
}

function cpuCell(r: Row): string {
  const s = r.load.seconds;
  const up = r.target === 'direct' ? '–' : String(pct(r.upstreamCpuMs, s));
  return `${pct(r.usage.cpuMs, s)} / ${up} / ${pct(r.load.cpuMs, s)} / ${pct(r.idleCpuMs ?? 0, s)} | ${Math.round(r.stealPct)}`;
}

/** When, what and where: the date, the commit, the machine (with its load: it may be shared), the run's settings. */
export function machineLine(opts: BenchOptions, dataDir: string): string {
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '?';
    }
  };
  let fsType = 'disk';
  try {
    if (fs.statfsSync(dataDir).type === 0x01021994) fsType = 'tmpfs';
  } catch {
    /* not created yet */
  }
  const cpus = os.cpus();
  return [
    `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, commit ${process.env.BENCH_COMMIT || git('rev-parse', '--short', 'HEAD')}`,
    `${cpus.length} × ${cpus[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} at the end`,
    `non-streamed chat ${opts.seconds} s per figure, everything else ${opts.routeSeconds} s, after ${opts.warmupSeconds} s of warm-up per scenario and target; ` +
      `gateways at LOG_LEVEL=${opts.logLevel}, embedded data directory on ${fsType}; every target up throughout, measured in turns` +
      (opts.rounds > 1 ? `, ${opts.rounds} rounds per figure (the round with the median req/s shown)` : ''),
  ].join('\n');
}

export function tables(rows: Row[]): string {
  const out: string[] = [];
  const plain = rows.filter((r) => !r.stream);
  if (plain.length) {
    out.push(
      '| scenario | target | conn. | req/s | p50 ms | p99 ms | mean ms | added p50 ms | added mean ms | errors + non-2xx | RSS MiB (max) | CPU % target / upstream / load gen. / waiting targets | steal % |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const r of plain) {
      const d = directOf(rows, r);
      const l = r.load.latency;
      out.push(
        `| ${r.scenario} | ${r.target} | ${r.connections} | ${Math.round(r.load.rps)} | ${ms(l.p50)} | ${ms(l.p99)} | ${ms(l.mean)} | ` +
          `${d ? signed(l.p50 - d.load.latency.p50) : ''} | ${d ? signed(l.mean - d.load.latency.mean) : ''} | ` +
          `${r.load.errors + r.load.non2xx} | ${Math.round(r.usage.maxRssMiB)} | ${cpuCell(r)} |`,
      );
    }
  }
  const streams = rows.filter((r) => r.stream);
  if (streams.length) {
    out.push(
      '',
      'Streamed: TTFT is the time to the first body byte, total the time to the last (`data: [DONE]`).',
      '',
      '| scenario | target | conn. | req/s | TTFT p50 ms | TTFT p99 ms | total p50 ms | total p99 ms | TTFT added p50 ms | total added p50 ms | errors + non-2xx | RSS MiB (max) | CPU % target / upstream / load gen. / waiting targets | steal % |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    );
    for (const r of streams) {
      const d = directOf(rows, r);
      const t = r.load.ttfb!;
      const l = r.load.latency;
      out.push(
        `| ${r.scenario} | ${r.target} | ${r.connections} | ${Math.round(r.load.rps)} | ${ms(t.p50)} | ${ms(t.p99)} | ${ms(l.p50)} | ${ms(l.p99)} | ` +
          `${d ? signed(t.p50 - d.load.ttfb!.p50) : ''} | ${d ? signed(l.p50 - d.load.latency.p50) : ''} | ` +
          `${r.load.errors + r.load.non2xx} | ${Math.round(r.usage.maxRssMiB)} | ${cpuCell(r)} |`,
      );
    }
  }
  return out.join('\n');
}

/**
 * The same ratio round by round: the medians above may come from different rounds (each target's own median), and on
 * a machine whose speed drifts, the ratio within one round is the one taken on one machine.
 */
function perRound(r: Row, pk: Row): string {
  const a = r.roundsRps ?? [];
  const b = pk.roundsRps ?? [];
  if (a.length < 2 || a.length !== b.length) return '';
  return `; round by round ${a.map((x, i) => (x / b[i]).toFixed(2)).join(', ')}`;
}

export function ratios(rows: Row[], connections: number): string {
  const find = (scenario: string, target: TargetName, c: number) =>
    rows.find((r) => r.scenario === scenario && r.target === target && r.connections === c);
  const lines: string[] = [];
  const scenarios = [...new Set(rows.map((r) => r.scenario))];
  for (const s of scenarios) {
    const pk = find(s, 'portkey', connections);
    if (!pk) continue;
    const parts = (['embedded', 'fleet', 'fleet-kafka'] as const)
      .map((t) => find(s, t, connections))
      .filter((r): r is Row => r !== undefined)
      .map(
        (r) =>
          `${r.target} ÷ Portkey ${(r.load.rps / pk.load.rps).toFixed(2)} (${Math.round(r.load.rps)} vs ${Math.round(pk.load.rps)}${perRound(r, pk)})`,
      );
    if (parts.length) lines.push(`- ${s}, req/s at c=${connections}: ${parts.join('; ')}`);
  }
  for (const s of scenarios) {
    for (const c of [1, connections]) {
      const added = (['embedded', 'fleet', 'fleet-kafka', 'portkey'] as const)
        .map((t) => find(s, t, c))
        .filter((r): r is Row => r !== undefined)
        .map((r) => {
          const d = directOf(rows, r);
          if (!d) return undefined;
          return r.stream
            ? `${r.target} ${signed(r.load.ttfb!.p50 - d.load.ttfb!.p50)}`
            : `${r.target} ${signed(r.load.latency.p50 - d.load.latency.p50)} / ${signed(r.load.latency.mean - d.load.latency.mean)}`;
        })
        .filter(Boolean);
      if (!added.length || (c === connections && !rows.find((r) => r.scenario === s)?.stream)) continue;
      const what = rows.find((r) => r.scenario === s)?.stream ? 'TTFT added over direct, p50 ms' : 'added over direct, p50 / mean ms';
      lines.push(`- ${s}, ${what} at c=${c}: ${added.join('; ')}`);
    }
  }
  return lines.join('\n');
}

/** Every round's req/s per figure, when figures were taken more than once: how far the machine moved them. */
export function roundsBlock(rows: Row[]): string {
  const multi = rows.filter((r) => (r.roundsRps?.length ?? 0) > 1);
  if (!multi.length) return '';
  return multi.map((r) => `- ${r.scenario} ${r.target} c=${r.connections}: ${r.roundsRps!.map((x) => Math.round(x)).join(', ')} req/s`).join('\n');
}
