import type { Lifecycle } from './lifecycle';
import type { Logger } from './logger';
import { startParts } from './run-parts';
import type { Served } from './serve';

/** A running process: its listeners, and `stop`, which ends open streams and drains (SIGTERM, or a test's end). */
export interface RunningProcess {
  served: Served;
  /** The listener as this host reaches it (a wildcard bind address is not one to connect to). */
  url: string;
  stop(): Promise<void>;
}

/** The address to reach a listener bound to `host` from this host. */
export function reachableUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/**
 * The one lifecycle of every process, embedded or fleet: starts `parts`, opens the listeners with `listen`, whose
 * readiness is the parts' and whose drain ends by stopping them, then tells them where it listens. A failed listen
 * stops what had started.
 */
export async function startAndServe(
  parts: readonly Lifecycle[],
  opts: { logger: Logger; host: string; listen: (hooks: { ready: () => Promise<void>; onDrained: () => Promise<void> }) => Promise<Served> },
): Promise<RunningProcess> {
  const started = await startParts(parts, opts.logger);
  let served: Served;
  try {
    served = await opts.listen({ ready: started.ready, onDrained: started.stop });
  } catch (err) {
    await started.stop().catch(() => undefined);
    throw err;
  }
  const url = reachableUrl(opts.host, served.port);
  started.listening(url);
  return {
    served,
    url,
    stop: () => {
      started.preClose();
      return served.shutdown();
    },
  };
}
