import '@gateway/service-kit/src/tracing-register';
import path from 'node:path';
import { createBillingHttpClient } from '@gateway/billing-client';
import { openBus } from '@gateway/bus';
import { buildRegistry, loadConfig, readEnv, serviceUrl } from '@gateway/config';
import { createLogger, createMetrics, createServiceApp, finishApp, requireInternalToken, runMain, serve } from '@gateway/service-kit';
import { Circuits } from '@gateway/spend';
import { openMedia, s3OptionsOf } from './open';

/** Fleet entry: the media routes as their own process; holds over HTTP to billing, settles over the bus. */
runMain('media', async () => {
  const env = readEnv(process.env, { host: '0.0.0.0' });
  const config = loadConfig(env.GATEWAY_CONFIG);
  const logger = createLogger('media', env.LOG_LEVEL);
  const billing = createBillingHttpClient(serviceUrl(env, 'billing', 'the media service'), env.GATEWAY_INTERNAL_TOKEN);
  const bus = openBus({ kind: env.BUS, redisUrl: env.REDIS_URL, kafkaBrokers: env.KAFKA_BROKERS, prefix: env.GATEWAY_BUS_PREFIX });
  const metrics = createMetrics();
  const media = await openMedia(
    config,
    { registry: buildRegistry(config), billing, bus, circuits: new Circuits(), logger, metrics },
    { databaseUrl: env.DATABASE_URL, dataDir: path.resolve(env.GATEWAY_DATA_DIR), publicUrl: env.GATEWAY_PUBLIC_URL, s3: s3OptionsOf(env) },
  );

  const app = createServiceApp();
  app.use(requireInternalToken(env.GATEWAY_INTERNAL_TOKEN));
  app.use(media.service.router);
  finishApp(app, logger);
  media.service.start();
  const served = await serve(app, {
    service: 'media',
    port: env.PORT,
    host: env.HOST,
    metricsPort: env.METRICS_PORT,
    logger,
    metrics,
    ready: async () => {
      await billing.ping();
      await bus.ping();
      await media.ping();
    },
    onDrained: async () => {
      await bus.close();
      await media.close();
      await billing.close();
    },
  });
  logger.info({ port: served.port, metricsPort: served.metricsPort }, 'media listening');
  return { stop: () => served.shutdown(), logger };
});
