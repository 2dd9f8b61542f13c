import '@gateway/service-kit/tracing-register';
import path from 'node:path';
import { createBillingHttpClient } from '@gateway/billing-client';
import { busOptionsFromEnv, openBus } from '@gateway/bus';
import { loadFleetConfig, readFleetEnv, serviceUrl } from '@gateway/config';
import { busPart, createLogger, createMetrics, internalListener, runFleetProcess } from '@gateway/service-kit';
import { openFleetServiceDb } from '@gateway/db';
import { catalogueService } from './gateway-service';
import { migrations } from './migrations';
import { openCatalogue } from './open';
import { redisSharedAnswers } from './shared-answers';
import { redisPing } from './status/redis-ping';

/** Fleet entry: the public catalogue, stats and the status monitor. */
runFleetProcess('catalogue', async () => {
  const env = readFleetEnv('catalogue service');
  const config = loadFleetConfig(env, 'catalogue service');
  const logger = createLogger('catalogue', env.LOG_LEVEL);
  const metrics = createMetrics();
  const bus = openBus({ ...busOptionsFromEnv(env), metrics });
  // Billing is only measured (the payments component), never needed to answer: the catalogue starts and serves without it.
  const billing = createBillingHttpClient(serviceUrl(env, 'billing', 'the status monitor'), env.GATEWAY_INTERNAL_TOKEN);
  const redis = env.REDIS_URL ? redisPing(env.REDIS_URL) : undefined;
  const shared = env.REDIS_URL ? redisSharedAnswers(env.REDIS_URL, env.GATEWAY_METER_PREFIX) : undefined;
  const catalogue = await openCatalogue({
    config,
    bus,
    logger,
    db: await openFleetServiceDb('catalogue', migrations, { databaseUrl: env.DATABASE_URL, dataDir: path.resolve(env.GATEWAY_DATA_DIR), logger }),
    dataDir: path.resolve(env.GATEWAY_DATA_DIR),
    shared,
    probes: {
      apiUrl: () => env.STATUS_API_URL ?? env.GATEWAY_PUBLIC_URL,
      billingPing: () => billing.ping(),
      // On PostgreSQL the catalogue's schema shares the server with the other services' databases, so its ping is theirs.
      storage: redis ? [redis] : [],
    },
  });
  const service = catalogueService(catalogue);
  return {
    env,
    logger,
    metrics,
    parts: [
      { name: 'billing client', close: () => billing.close() },
      { name: 'shared answers', close: async () => shared?.close() },
      { name: 'redis', close: async () => redis?.close() },
      // Stops delivering before the catalogue closes its consumers, its tally and its database.
      busPart(bus, 'drain'),
      service,
    ],
    listener: internalListener(logger, env, service.routers),
    // Ready while its consumers run (the bus part); its database and the bus are shared dependencies (serve.ts), shown on /healthz.
    dependencies: { database: () => catalogue.ping(), bus: () => bus.ping() },
  };
});
