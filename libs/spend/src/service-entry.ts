import type { RequestHandler } from 'express';
import { type ReplayPort, createBillingHttpClient } from '@gateway/billing-client';
import { busOptionsFromEnv, openBus } from '@gateway/bus';
import { buildRegistry, type FleetEnv, type GatewayConfig, loadFleetConfig, parseDuration, readFleetEnv, serviceUrl } from '@gateway/config';
import { createLogger, createMetrics, requireInternalToken, runMain, serveFleetProcess, serviceListener } from '@gateway/service-kit';
import { Circuits } from './circuits';
import { startHealthReporter } from './health-reporter';
import { HOLD_CLOSE_RESERVE_MS, OpenHolds, closeHoldsBeforeBus } from './open-holds';
import type { SpendDeps } from './paid-call';

/** What a spending service adds to the shared entry: its routes, and whatever it opens and must close. */
export interface SpendingService {
  router: RequestHandler;
  /** Its own database answers (shown as a dependency, beside billing and the bus). */
  ping?: () => Promise<void>;
  /** Runs once in-flight requests have finished. */
  close?: () => Promise<void>;
}

/**
 * The fleet entry every service that spends money shares (text, media, ...): holds over HTTP to billing, settles
 * over the bus, its routes behind the internal token, probes and metrics on their own listener.
 */
export function runSpendingService(
  name: string,
  build: (spend: SpendDeps & { replays: ReplayPort }, env: FleetEnv, config: GatewayConfig) => Promise<SpendingService> | SpendingService,
): void {
  runMain(name, async () => {
    const env = readFleetEnv(`${name} service`);
    const config = loadFleetConfig(env, `${name} service`);
    const logger = createLogger(name, env.LOG_LEVEL);
    const billing = createBillingHttpClient(serviceUrl(env, 'billing', `the ${name} service`), env.GATEWAY_INTERNAL_TOKEN);
    const metrics = createMetrics();
    const bus = openBus({ ...busOptionsFromEnv(env), metrics });
    const registry = buildRegistry(config);
    const circuits = new Circuits();
    const openHolds = new OpenHolds();
    const holdTtlMs = parseDuration(config.limits.hold_ttl);
    const service = await build({ registry, billing, replays: billing, bus, circuits, logger, metrics, openHolds, holdTtlMs }, env, config);
    // The status monitor's view of the providers: what this process's traffic saw, once per sample interval.
    const health = config.status.enabled
      ? startHealthReporter({ bus, circuits, registry, logger, source: name, intervalMs: parseDuration(config.status.sample_interval) })
      : undefined;

    const listener = serviceListener(logger, requireInternalToken(env.GATEWAY_INTERNAL_TOKEN, env.GATEWAY_INTERNAL_TOKEN_ACCEPTED), service.router);
    const served = await serveFleetProcess(listener, env, {
      service: name,
      logger,
      metrics,
      // Ready while its consumers (jobs') can run: billing, the bus and its database are shared by every replica, so
      // their outage is answered per request (a retryable 503) rather than by taking every replica out of rotation. A
      // consumer stopped for good is this pod's own fault, and only its restart cures it.
      ready: async () => bus.checkConsumers(),
      dependencies: {
        billing: () => billing.ping(),
        bus: () => bus.ping(),
        ...(service.ping ? { database: service.ping } : {}),
      },
      drainReserveMs: HOLD_CLOSE_RESERVE_MS,
      onDrained: async () => {
        await closeHoldsBeforeBus(openHolds, logger, HOLD_CLOSE_RESERVE_MS);
        health?.stop();
        // The service first (a job worker's last steps publish through it), then the bus, which delivers what is queued.
        await service.close?.();
        await bus.close();
        await billing.close();
      },
    });
    return { stop: () => served.shutdown(), logger };
  });
}
