import { type ReplayPort, createBillingHttpClient } from '@gateway/billing-client';
import { busOptionsFromEnv, openBus } from '@gateway/bus';
import { buildRegistry, type FleetEnv, type GatewayConfig, loadFleetConfig, parseDuration, readFleetEnv, serviceUrl } from '@gateway/config';
import { type GatewayService, type Lifecycle, busPart, createLogger, createMetrics, internalListener, runFleetProcess } from '@gateway/service-kit';
import { Circuits } from './circuits';
import { startHealthReporter } from './health-reporter';
import { HOLD_CLOSE_RESERVE_MS, OpenHolds } from './open-holds';
import type { SpendDeps } from './paid-call';
import { spendPart } from './spend-part';

/** What a spending service adds to the shared entry: the service, and whatever it opened for it. */
export interface SpendingService {
  service: GatewayService;
  /** Opened for the service (its peers' clients), in start order: they close after it, in reverse. */
  opened?: Lifecycle[];
  /** Its own database answers (shown as a dependency, beside billing and the bus). */
  ping?: () => Promise<void>;
}

/**
 * The fleet entry every service that spends money shares (text, media, jobs): holds over HTTP to billing, settles
 * over the bus, its routes behind the internal token, probes and metrics on their own listener.
 */
export function runSpendingService(
  name: string,
  build: (spend: SpendDeps & { replays: ReplayPort }, env: FleetEnv, config: GatewayConfig) => Promise<SpendingService> | SpendingService,
): void {
  runFleetProcess(name, async () => {
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
    const built = await build({ registry, billing, replays: billing, bus, circuits, logger, metrics, openHolds, holdTtlMs }, env, config);
    return {
      env,
      logger,
      metrics,
      parts: [
        { name: 'billing client', close: () => billing.close() },
        // The service drains first (a job worker's last steps publish through it), then the bus delivers what is queued.
        busPart(bus, 'close'),
        ...(built.opened ?? []),
        built.service,
        spendPart({
          openHolds,
          logger,
          startHealth: () =>
            config.status.enabled
              ? startHealthReporter({ bus, circuits, registry, logger, source: name, intervalMs: parseDuration(config.status.sample_interval) })
              : undefined,
        }),
      ],
      listener: internalListener(logger, env, built.service.routers),
      // Ready while its consumers run (the bus part; a consumer stopped for good is this pod's own fault): billing, the bus and its database are shared by every replica, so their outage is
      // answered per request (a retryable 503) rather than by taking every replica out of rotation.
      dependencies: {
        billing: () => billing.ping(),
        bus: () => bus.ping(),
        ...(built.ping ? { database: built.ping } : {}),
      },
      drainReserveMs: HOLD_CLOSE_RESERVE_MS,
    };
  });
}
