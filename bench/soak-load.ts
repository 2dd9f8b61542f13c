/**
 * `pnpm soak`'s load generator, in its own process: autocannon at a fixed overall rate for the whole soak,
 * alternating a non-streamed and a streamed chat call on every connection, counting answers by status.
 */
import autocannon from 'autocannon';
import { childMain } from './load';

export interface SoakLoadSpec {
  url: string;
  headers: Record<string, string>;
  bodies: string[];
  connections: number;
  seconds: number;
  /** Requests per second over all connections; 0 runs flat out (the peak measurement). */
  rate: number;
}

export interface SoakLoadResult {
  requests: number;
  seconds: number;
  rps: number;
  byStatus: Record<string, number>;
  /** Connection errors and timeouts: answers that never came. */
  errors: number;
}

export function runSoakLoad(spec: SoakLoadSpec): Promise<SoakLoadResult> {
  const byStatus: Record<string, number> = {};
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: spec.url,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...spec.headers },
        requests: spec.bodies.map((body) => ({ method: 'POST', body })),
        connections: spec.connections,
        duration: spec.seconds,
        ...(spec.rate > 0 ? { overallRate: spec.rate } : {}),
        timeout: 30,
      },
      (err: unknown, r: autocannon.Result) => {
        if (err) return reject(err);
        resolve({ requests: r.requests.total, seconds: r.duration, rps: r.requests.total / r.duration, byStatus, errors: r.errors + r.timeouts });
      },
    );
    instance.on('response', (_client: unknown, statusCode: number) => {
      byStatus[statusCode] = (byStatus[statusCode] ?? 0) + 1;
    });
  });
}

if (require.main === module) childMain(runSoakLoad);
