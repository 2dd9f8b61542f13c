/** One target through its scenarios: proof that it proxies, a warm-up, then the figures with its RSS and CPU. */
import { runAutocannon, type LoadResult, type LoadSpec } from './load';
import type { BenchOptions } from './options';
import { cpuTimes, ProcSampler, runJsonChild, stealPct } from './procs';
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

/**
 * The figures of every scenario the target has: for the direct target, each distinct upstream call once (gateway
 * scenarios that share one, like chat and completions, compare with the same direct figures).
 */
export async function measureTarget(
  target: Target,
  scenarios: Scenario[],
  opts: BenchOptions,
  upstream: Upstream,
  rows: Row[],
  log: (line: string) => void,
): Promise<void> {
  const todo = new Map<string, { scenario: Scenario; connections: Set<number> }>();
  for (const s of scenarios) {
    // The direct target measures upstream calls: keyed by the call, with every connection count a scenario needs.
    const key = target.name === 'direct' ? s.direct : s.name;
    const entry = todo.get(key) ?? {
      scenario: target.name === 'direct' ? (scenarios.find((x) => x.name === s.direct) ?? s) : s,
      connections: new Set(),
    };
    for (const c of connectionsOf(s, opts)) entry.connections.add(c);
    todo.set(key, entry);
  }
  for (const [key, { scenario: s, connections }] of todo) {
    const req = await target.request(s);
    if (!req) continue;
    const stream = target.name === 'direct' ? key === 'chat-stream' : s.stream;
    const cs = [...connections].sort((a, b) => b - a);
    if (opts.warmupSeconds > 0) await runLoad(specOf(target, req, cs[0], opts.warmupSeconds), stream, opts);
    for (const c of cs) {
      const seconds = target.name === 'direct' && key !== s.name ? opts.routeSeconds : secondsOf(s, opts);
      const own = new ProcSampler(target.pids).start();
      const up = new ProcSampler([upstream.child.pid!]).start();
      const machine = cpuTimes();
      const load = await runLoad(specOf(target, req, c, seconds), stream, opts);
      const steal = stealPct(machine, cpuTimes());
      const usage = own.stop();
      const upstreamUsage = up.stop();
      rows.push({
        scenario: key,
        direct: s.direct,
        stream,
        target: target.name,
        connections: c,
        load,
        usage,
        upstreamCpuMs: upstreamUsage.cpuMs,
        stealPct: steal,
      });
      log(
        `${target.name} ${key} c=${c}: ${Math.round(load.rps)} req/s, p50 ${(load.ttfb ?? load.latency).p50.toFixed(2)} ms` +
          `${load.errors + load.non2xx ? `, ${load.errors + load.non2xx} errors + non-2xx` : ''}`,
      );
    }
  }
}
