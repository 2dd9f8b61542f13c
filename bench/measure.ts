/** The targets through their scenarios: proof that each proxies, a warm-up, then the figures, in turns, with RSS and CPU. */
import { runAutocannon, type LoadResult, type LoadSpec } from './load';
import type { BenchOptions } from './options';
import { cpuTimes, ProcSampler, type ProcUsage, runJsonChild, stealPct as stealPercent } from './procs';
import type { Row } from './report';
import { connectionsOf, type Req, SCENARIOS, type Scenario, secondsOf } from './scenarios';
import type { Target, Upstream } from './targets';

function specOf(target: Target, req: Req, connections: number, seconds: number): LoadSpec {
  return {
    url: `${target.base}${req.path}`,
    method: req.method,
    body: req.body === undefined ? undefined : JSON.stringify(req.body),
    headers: { ...(req.body === undefined ? {} : { 'content-type': 'application/json' }), ...target.headers },
    connections,
    seconds,
  };
}

/** One load run in its own process (autocannon, or the streaming client); BENCH_LOAD_IN_PROCESS keeps autocannon here. */
export function runLoad(spec: LoadSpec, stream: boolean, opts: Pick<BenchOptions, 'loadInProcess'>): Promise<LoadResult> {
  if (stream) return runJsonChild<LoadResult>('stream-load.ts', spec);
  return opts.loadInProcess ? runAutocannon(spec) : runJsonChild<LoadResult>('load.ts', spec);
}

/** Each scenario once: a 200 with the upstream's answer (a target that does not really proxy is never measured). */
export async function verifyTarget(target: Target, scenarios: Scenario[]): Promise<void> {
  for (const s of scenarios) {
    const req = await target.request(s);
    if (!req) continue;
    const r = await fetch(`${target.base}${req.path}`, {
      method: req.method,
      headers: { ...(req.body === undefined ? {} : { 'content-type': 'application/json' }), ...target.headers },
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
    });
    // The direct target answers the upstream call, which has the shape of the scenario of that name (chat for completions).
    const check = target.name === 'direct' ? SCENARIOS.find((x) => x.name === s.direct)!.check : s.check;
    const problem = check(r.status, await r.text());
    if (problem) throw new Error(`${target.name} does not proxy ${s.name}: ${problem}`);
  }
}

/** One figure to take: a target, the scenario (for direct: the upstream call) and a connection count. */
interface Cell {
  target: Target;
  /** The scenario's name; for the direct target, the upstream call's (chat, chat-stream, embeddings...). */
  key: string;
  scenario: Scenario;
  req: Req;
  stream: boolean;
  connections: number;
  seconds: number;
}

/** A cell's run: what the load generator saw, with the target's and the upstream's usage and the steal meanwhile. */
interface Taken {
  load: LoadResult;
  usage: ProcUsage;
  upstreamCpuMs: number;
  idleCpuMs: number;
  stealPct: number;
}

/**
 * The cells of one scenario on every target: for the direct target, the upstream call the scenario makes, unless an
 * earlier scenario already measured it (gateway scenarios that share one, like chat and completions, compare with
 * the same direct figures).
 */
async function cellsOf(s: Scenario, scenarios: Scenario[], targets: Target[], opts: BenchOptions, done: Set<string>): Promise<Cell[]> {
  const cells: Cell[] = [];
  for (const target of targets) {
    const direct = target.name === 'direct';
    const key = direct ? s.direct : s.name;
    if (direct && done.has(key)) continue;
    const scenario = direct ? (scenarios.find((x) => x.name === s.direct) ?? s) : s;
    const req = await target.request(scenario);
    if (!req) continue;
    if (direct) done.add(key);
    const stream = direct ? key === 'chat-stream' : s.stream;
    // The direct target's figures of a call no scenario of that name measures run as long as the other routes'.
    const seconds = direct && key !== s.name ? opts.routeSeconds : secondsOf(s, opts);
    // The direct call runs at every connection count any scenario making it needs.
    const counts = direct ? new Set(scenarios.filter((x) => x.direct === key).flatMap((x) => connectionsOf(x, opts))) : connectionsOf(s, opts);
    for (const connections of counts) cells.push({ target, key, scenario, req, stream, connections, seconds });
  }
  return cells;
}

/** A window in which the gateways together use under QUIET_SHARE of a core counts as quiet. */
const QUIET_WINDOW_MS = 500;
const QUIET_SHARE = 0.05;
const QUIET_WAIT_MAX_MS = 30_000;

/**
 * Waits until every gateway is quiet. After a run at 50 connections a gateway keeps working for seconds: the fleet's
 * billing applies the closes on the bus, the catalogue and jobs read the usage events, the embedded write-behind
 * writes the ledger. Measured at once, the next target paid for that (the "waiting targets" column read over a core
 * while the direct upstream and Portkey ran), so it is waited out; what remains in that column is idle cost.
 */
async function untilQuiet(targets: Target[], log: (line: string) => void): Promise<void> {
  const pids = targets.filter((t) => t.name !== 'direct').flatMap((t) => t.pids);
  const deadline = Date.now() + QUIET_WAIT_MAX_MS;
  while (Date.now() < deadline) {
    const sampler = new ProcSampler(pids).start();
    await new Promise((resolve) => setTimeout(resolve, QUIET_WINDOW_MS));
    if (sampler.stop().cpuMs < QUIET_WINDOW_MS * QUIET_SHARE) return;
  }
  log(`the gateways were still busy after ${QUIET_WAIT_MAX_MS / 1000} s; measuring anyway`);
}

const SETTLE_POLL_MS = 20;
const SETTLE_WAIT_MAX_MS = 120_000;

/**
 * Runs the load, then, on a gateway, waits until the account holds nothing (every call's settle applied) and counts
 * that wait in the run: its seconds and req/s. A gateway that answers and leaves its settles queued has not done the
 * work of those calls yet; measured at the last answer, the fleet on Kafka read 2,100 req/s while it applied ~1,050
 * settles a second, 9,000 behind at the end of a 5 s run. `held` is shown to the cent, so a tail of a few dozen bench
 * calls (each holds $0.00014) goes unseen: a few milliseconds at these rates.
 */
export async function loadUntilSettled(
  target: Target,
  spec: LoadSpec,
  stream: boolean,
  opts: Pick<BenchOptions, 'loadInProcess'>,
): Promise<LoadResult> {
  const load = await runLoad(spec, stream, opts);
  if (!target.holding) return load;
  const from = performance.now();
  while (await target.holding()) {
    if (performance.now() - from > SETTLE_WAIT_MAX_MS)
      throw new Error(`${target.name}: money still held ${SETTLE_WAIT_MAX_MS / 1000} s after the load`);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
  }
  const settledAfterMs = performance.now() - from;
  if (settledAfterMs < SETTLE_POLL_MS) return { ...load, settledAfterMs: 0 };
  const seconds = load.seconds + settledAfterMs / 1000;
  return { ...load, seconds, rps: load.requests / seconds, settledAfterMs };
}

async function take(cell: Cell, targets: Target[], opts: BenchOptions, upstream: Upstream): Promise<Taken> {
  const own = new ProcSampler(cell.target.pids).start();
  const up = new ProcSampler([upstream.child.pid!]).start();
  // The other gateways wait, up, meanwhile: what their timers and pollers cost is a tax on this figure.
  const others = new ProcSampler(targets.filter((t) => t !== cell.target && t.name !== 'direct').flatMap((t) => t.pids)).start();
  const machine = cpuTimes();
  const load = await loadUntilSettled(cell.target, specOf(cell.target, cell.req, cell.connections, cell.seconds), cell.stream, opts);
  const stealPct = stealPercent(machine, cpuTimes());
  const usage = own.stop();
  return { load, usage, upstreamCpuMs: up.stop().cpuMs, idleCpuMs: others.stop().cpuMs, stealPct };
}

/** The run whose req/s is the median of the rounds (the lower middle one of an even count): its figures stay one run's. */
function medianRun(runs: Taken[]): Taken {
  const sorted = [...runs].sort((a, b) => a.load.rps - b.load.rps);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/**
 * Every target through every scenario, in turns: per scenario, each target warms up, then for each connection
 * count the targets run one after another, `opts.rounds` times, each round in another order. A machine whose speed
 * drifts (a shared virtual machine: see the steal column) then slows every target alike, instead of whichever ran
 * during the slow minute. Each figure is the round with the median req/s.
 */
export async function measureInTurns(
  targets: Target[],
  scenarios: Scenario[],
  opts: BenchOptions,
  upstream: Upstream,
  log: (line: string) => void,
): Promise<Row[]> {
  const rows: Row[] = [];
  const done = new Set<string>();
  for (const s of scenarios) {
    const cells = await cellsOf(s, scenarios, targets, opts, done);
    if (opts.warmupSeconds > 0) {
      for (const target of targets) {
        const first = cells.find((c) => c.target === target);
        if (first) await runLoad(specOf(target, first.req, opts.connections, opts.warmupSeconds), first.stream, opts);
      }
    }
    const counts = [...new Set(cells.map((c) => c.connections))].sort((a, b) => b - a);
    for (const connections of counts) {
      const group = cells.filter((c) => c.connections === connections);
      const runs = new Map<Cell, Taken[]>(group.map((c) => [c, []]));
      for (let round = 0; round < opts.rounds; round++) {
        for (let i = 0; i < group.length; i++) {
          const cell = group[(i + round) % group.length];
          await untilQuiet(targets, log);
          const taken = await take(cell, targets, opts, upstream);
          runs.get(cell)!.push(taken);
          const { load } = taken;
          log(
            `${cell.target.name} ${cell.key} c=${connections}${opts.rounds > 1 ? ` round ${round + 1}/${opts.rounds}` : ''}: ${Math.round(load.rps)} req/s, ` +
              `p50 ${(load.ttfb ?? load.latency).p50.toFixed(2)} ms, steal ${Math.round(taken.stealPct)} %` +
              `${load.settledAfterMs ? `, settled ${(load.settledAfterMs / 1000).toFixed(1)} s after the last answer (counted)` : ''}` +
              `${load.errors + load.non2xx ? `, ${load.errors + load.non2xx} errors + non-2xx` : ''}`,
          );
        }
      }
      for (const cell of group) {
        const all = runs.get(cell)!;
        const m = medianRun(all);
        rows.push({
          scenario: cell.key,
          direct: cell.scenario.direct,
          stream: cell.stream,
          target: cell.target.name,
          connections,
          load: m.load,
          usage: m.usage,
          upstreamCpuMs: m.upstreamCpuMs,
          idleCpuMs: m.idleCpuMs,
          stealPct: m.stealPct,
          roundsRps: all.map((t) => t.load.rps),
        });
      }
    }
  }
  return rows;
}
