import '@gateway/service-kit/tracing-register';
import path from 'node:path';
import { createBillingHttpClient } from '@gateway/billing-client';
import { busOptionsFromEnv, openBus } from '@gateway/bus';
import { loadFleetConfig, readFleetEnv, serviceUrl } from '@gateway/config';
import { createLogger, createMetrics, requireInternalToken, runMain, serveFleetProcess, serviceListener } from '@gateway/service-kit';
import { openFleetServiceDb } from '@gateway/db';
import { migrations } from './migrations';
import { openCatalogue } from './open';
import { redisSharedAnswers } from './shared-answers';
import { redisPing } from './status/redis-ping';

/** Fleet entry: the public catalogue, stats and the status monitor. */
runMain('catalogue', async () => {
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
  await catalogue.subscribe();
  const served = await serveFleetProcess(
    serviceListener(logger, requireInternalToken(env.GATEWAY_INTERNAL_TOKEN, env.GATEWAY_INTERNAL_TOKEN_ACCEPTED), catalogue.service.router),
    env,
    {
      service: 'catalogue',
      logger,
      metrics,
      // Ready while its consumers can run; its database and the bus are shared dependencies (serve.ts), shown on
      // /healthz. A consumer stopped for good is this pod's own fault, and only its restart cures it.
      ready: async () => bus.checkConsumers(),
      dependencies: { database: () => catalogue.ping(), bus: () => bus.ping() },
      onDrained: async () => {
        await bus.close();
        await catalogue.close();
        await redis?.close();
        await shared?.close();
        await billing.close();
      },
    },
  );
  catalogue.startMonitor();
  return { stop: () => served.shutdown(), logger };
});
