import type { AppListener } from './app';
import { serviceListener } from './app';
import type { Dependencies } from './dependencies';
import { requireInternalToken } from './internal-token';
import type { Lifecycle, ServiceRouters } from './lifecycle';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { runMain } from './run-main';
import { type ListenEnv, serveFleetProcess } from './serve';
import { startAndServe } from './serve-parts';

/** What a fleet process's main.ts opens: its parts (what it opened, then its service), its listener, its dependencies. */
export interface FleetProcess {
  env: ListenEnv;
  logger: Logger;
  metrics: Metrics;
  /** In start order; they stop in reverse (Lifecycle). */
  parts: readonly Lifecycle[];
  listener: AppListener;
  /** Checked in the background, shown on /healthz and gateway_dependency_up (serve.ts). */
  dependencies: Dependencies;
  /** Its listener is the public one (the edge). */
  public?: boolean;
  drainReserveMs?: number;
  /** More for the "listening" log line. */
  extra?: Record<string, unknown>;
}

/** A fleet service's listener: its own internal routes, then the internal token check, then its admin and public routes. */
export function internalListener(
  logger: Logger,
  env: { GATEWAY_INTERNAL_TOKEN?: string; GATEWAY_INTERNAL_TOKEN_ACCEPTED?: string },
  routers: ServiceRouters,
): AppListener {
  return serviceListener(
    logger,
    ...(routers.internal ? [routers.internal] : []),
    requireInternalToken(env.GATEWAY_INTERNAL_TOKEN, env.GATEWAY_INTERNAL_TOKEN_ACCEPTED),
    ...(routers.admin ? [routers.admin] : []),
    routers.public,
  );
}

/** Every fleet main.ts: open the process, then the one lifecycle (startAndServe) under runMain's signals and exit codes. */
export function runFleetProcess(name: string, open: () => Promise<FleetProcess>): void {
  runMain(name, async () => {
    const p = await open();
    const running = await startAndServe(p.parts, {
      logger: p.logger,
      host: p.env.HOST,
      listen: (hooks) =>
        serveFleetProcess(p.listener, p.env, {
          service: name,
          logger: p.logger,
          metrics: p.metrics,
          dependencies: p.dependencies,
          public: p.public,
          drainReserveMs: p.drainReserveMs,
          extra: p.extra,
          ...hooks,
        }),
    });
    return { stop: running.stop, logger: p.logger };
  });
}
