import '@gateway/service-kit/tracing-register';
import { busOptionsFromEnv, openBus } from '@gateway/bus';
import { ConfigError, loadFleetConfig, readFleetEnv } from '@gateway/config';
import { openFleetServiceDb } from '@gateway/db';
import { createLogger, createMetrics, internalListener, runFleetProcess } from '@gateway/service-kit';
import { billingService } from './gateway-service';
import { createBillingService, migrations } from './index';

/** Fleet entry: billing as its own process on PostgreSQL and the configured bus. */
runFleetProcess('billing', async () => {
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
  const service = billingService(billing);
  return {
    env,
    logger,
    metrics,
    // Billing stops consuming before the bus closes, and the database closes last.
    parts: [{ name: 'database', close: () => db.close() }, { name: 'bus', close: () => bus.close() }, service],
    // The internal routes check the token themselves (billing-client's hold batches are the busiest of them).
    listener: internalListener(logger, env, service.routers),
    dependencies: { database: () => db.ping(), bus: () => bus.ping() },
  };
});
