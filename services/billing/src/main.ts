import '@gateway/service-kit/tracing-register';
import { busOptionsFromEnv, openBus } from '@gateway/bus';
import { ConfigError, loadFleetConfig, readFleetEnv } from '@gateway/config';
import { openFleetServiceDb } from '@gateway/db';
import { createLogger, createMetrics, requireInternalToken, runMain, serveFleetProcess, serviceListener } from '@gateway/service-kit';
import { createBillingService, migrations } from './index';

/** Fleet entry: billing as its own process on PostgreSQL and the configured bus. */
runMain('billing', async () => {
  const env = readFleetEnv('billing service');
  const config = loadFleetConfig(env, 'billing service');
  const logger = createLogger('billing', env.LOG_LEVEL);
  if (!env.DATABASE_URL) throw new ConfigError('Invalid environment:\n  DATABASE_URL: required for the billing service in the fleet');
  const db = await openFleetServiceDb('billing', migrations, { databaseUrl: env.DATABASE_URL, logger });
  const metrics = createMetrics();
  const bus = openBus({ ...busOptionsFromEnv(env), metrics });
  const internalToken = env.GATEWAY_INTERNAL_TOKEN;
  const acceptedInternalToken = env.GATEWAY_INTERNAL_TOKEN_ACCEPTED;
  const billing = await createBillingService({ db, bus, config, logger, adminToken: env.GATEWAY_ADMIN_TOKEN, internalToken, acceptedInternalToken });
  if (billing.generatedAdminToken) process.stdout.write(`Admin token (generated, shown once, keep it): ${billing.generatedAdminToken}\n`);

  // The internal routes check the token themselves (billing-client's hold batches are the busiest of them).
  const listener = serviceListener(
    logger,
    billing.internalRouter,
    requireInternalToken(internalToken, acceptedInternalToken),
    billing.adminRouter,
    billing.publicRouter,
  );
  await billing.start();
  const served = await serveFleetProcess(listener, env, {
    service: 'billing',
    logger,
    metrics,
    ready: billing.ready,
    dependencies: { database: () => db.ping(), bus: () => bus.ping() },
    onDrained: async () => {
      await billing.stop();
      await bus.close();
      await db.close();
    },
  });
  return { stop: () => served.shutdown(), logger };
});
