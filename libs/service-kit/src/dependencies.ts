import type { Logger } from './logger';
import type { Metrics } from './metrics';

/** The dependencies a process calls (billing, its database, the bus), each a check that throws when it is down. */
export type Dependencies = Record<string, () => Promise<void>>;

/** What the last check of each dependency found: "ok", or why not. */
export type DependencyReport = () => Record<string, string>;

/** How often the dependencies are checked, and how long one check may take before it counts as down. */
export const DEPENDENCY_CHECK_INTERVAL_MS = 10_000;
export const DEPENDENCY_CHECK_TIMEOUT_MS = 2_000;

function bounded(check: () => Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    check(),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Checks the dependencies in the background, never on a probe's request: a probe then answers at once whatever a
 * dependency does, and a hanging one cannot fail the liveness probe and have the pod restarted. The findings are for
 * people and alerts (/healthz and /readyz bodies, gateway_dependency_up), never for the probes' status codes: a
 * dependency's outage is answered per request with the retryable 503 envelope, and a pod that is taken out of
 * rotation for it would also stop serving the routes that do not need it.
 */
export function watchDependencies(
  dependencies: Dependencies,
  metrics: Metrics,
  logger: Logger,
  opts: { intervalMs?: number; timeoutMs?: number } = {},
): { report: DependencyReport; stop(): void } {
  const names = Object.keys(dependencies);
  const found = new Map<string, string>(names.map((n) => [n, 'unchecked']));
  if (names.length === 0) return { report: () => ({}), stop: () => undefined };
  metrics.gauge('gateway_dependency_up', 'Whether the last background check of a dependency succeeded (1) or not (0)', ['dependency'], () =>
    names.map((n) => [{ dependency: n }, found.get(n) === 'ok' ? 1 : 0]),
  );
  const check = () =>
    Promise.all(
      names.map(async (name) => {
        const before = found.get(name);
        try {
          await bounded(dependencies[name], opts.timeoutMs ?? DEPENDENCY_CHECK_TIMEOUT_MS);
          found.set(name, 'ok');
          if (before !== 'ok' && before !== 'unchecked') logger.info({ dependency: name }, 'dependency reachable again');
        } catch (e) {
          found.set(name, `down: ${(e as Error).message}`);
          if (before === 'ok' || before === 'unchecked') logger.warn({ dependency: name, err: e }, 'dependency unreachable');
        }
      }),
    );
  void check();
  const timer = setInterval(() => void check(), opts.intervalMs ?? DEPENDENCY_CHECK_INTERVAL_MS);
  timer.unref();
  return { report: () => Object.fromEntries(found), stop: () => clearInterval(timer) };
}
