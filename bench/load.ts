/**
 * The load generator for non-streamed scenarios: autocannon, in its own process so it never shares an event loop
 * with the orchestrator. `node --import tsx bench/load.ts '<LoadSpec as JSON>'` (or the JSON on stdin) prints one
 * line: the LoadResult as JSON.
 *
 * Latency is recorded from autocannon's per-response event (float milliseconds, 2xx only, as autocannon does)
 * rather than from its histogram, which keeps whole milliseconds: at one connection that would round a 0.3 ms
 * answer and a 1.4 ms one to 0 and 1.
 */
import autocannon from 'autocannon';
import { monotonicUs, Samples, type LatencySummary } from './stats';

export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  body?: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  /** Stop after this many requests instead of after `seconds` (bench/capacity.ts counts work per request). */
  amount?: number;
}

export interface LoadResult {
  /** Responses completed in the run, any status. */
  requests: number;
  /** The run's length as the load generator measured it. */
  seconds: number;
  rps: number;
  /** 2xx latencies (for streams: time to the last byte). */
  latency: LatencySummary;
  /** Streams only: time to the first body byte. */
  ttfb?: LatencySummary;
  /** Connection errors and timeouts (and, for streams, bodies that ended without [DONE]). */
  errors: number;
  non2xx: number;
  /** CPU time the load generator's own process used during the run. */
  cpuMs: number;
  /**
   * A gateway's run: how long after the last answer the account still held money (bench/measure.ts
   * loadUntilSettled); that wait is counted in `seconds` and `rps`.
   */
  settledAfterMs?: number;
  /** The run's window on CLOCK_MONOTONIC (µs), to cut a CPU profile to it. */
  window: { fromUs: number; toUs: number };
}

export function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const latencies = new Samples();
  const cpu0 = process.cpuUsage();
  const fromUs = monotonicUs();
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        method: spec.method,
        body: spec.body,
        headers: spec.headers,
        connections: spec.connections,
        ...(spec.amount ? { amount: spec.amount } : { duration: spec.seconds }),
      },
      (err: unknown, r: autocannon.Result) => {
        if (err) return reject(err);
        const toUs = monotonicUs();
        const cpu = process.cpuUsage(cpu0);
        resolve({
          requests: r.requests.total,
          seconds: r.duration,
          rps: r.requests.total / r.duration,
          latency: latencies.summary(),
          errors: r.errors + r.timeouts,
          non2xx: r.non2xx,
          cpuMs: (cpu.user + cpu.system) / 1000,
          window: { fromUs, toUs },
        });
      },
    );
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
}

/** A child's input: its first argument, or stdin when there is none. */
export async function readSpec<T>(): Promise<T> {
  if (process.argv[2]) return JSON.parse(process.argv[2]) as T;
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  return JSON.parse(input) as T;
}

/** A child's entry: read the spec, run, print the result as one JSON line, exit (1 with the error on stderr). */
export function childMain<S, R>(run: (spec: S) => Promise<R>): void {
  readSpec<S>()
    .then(run)
    .then(
      (result) => {
        process.stdout.write(`${JSON.stringify(result)}\n`);
        process.exit(0);
      },
      (e) => {
        process.stderr.write(`${(e as Error).stack ?? e}\n`);
        process.exit(1);
      },
    );
}

if (require.main === module) childMain(runAutocannon);
