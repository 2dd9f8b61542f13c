import '@gateway/service-kit/src/tracing-register';
import { buildRegistry, loadConfig, readEnv } from '@gateway/config';
import { createLogger, createMetrics, createServiceApp, finishApp, runMain, serve } from '@gateway/service-kit';
import { createCatalogueService } from './index';

/** Fleet entry: the public catalogue. */
runMain('catalogue', async () => {
  const env = readEnv(process.env, { host: '0.0.0.0' });
  const config = loadConfig(env.GATEWAY_CONFIG);
  const logger = createLogger('catalogue', env.LOG_LEVEL);
  const catalogue = createCatalogueService(buildRegistry(config));
  const app = createServiceApp();
  app.use(catalogue.router);
  finishApp(app, logger);
  const served = await serve(app, {
    service: 'catalogue',
    port: env.PORT,
    host: env.HOST,
    metricsPort: env.METRICS_PORT,
    logger,
    metrics: createMetrics(),
    ready: async () => {},
  });
  logger.info({ port: served.port, metricsPort: served.metricsPort }, 'catalogue listening');
  return { stop: () => served.shutdown(), logger };
});
