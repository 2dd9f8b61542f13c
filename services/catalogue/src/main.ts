import '@gateway/service-kit/src/tracing-register';
import { buildRegistry, loadConfig, readEnv } from '@gateway/config';
import { errorHandler } from '@gateway/errors';
import { INTERNAL, createLogger, createMetrics, createServiceApp, runMain, serve } from '@gateway/service-kit';
import { createCatalogueService } from './index';

/** Fleet entry: the public catalogue. */
runMain('catalogue', async () => {
  const env = readEnv(process.env, { host: '0.0.0.0' });
  const config = loadConfig(env.GATEWAY_CONFIG);
  const logger = createLogger('catalogue', env.LOG_LEVEL);
  const catalogue = createCatalogueService(buildRegistry(config));
  const app = createServiceApp({ service: 'catalogue', logger, metrics: createMetrics(), ready: async () => {} });
  app.use(catalogue.router);
  app.use(errorHandler((req) => String(req.headers[INTERNAL.requestId] ?? ''), (err) => logger.error({ err }, 'unhandled error')));
  const served = await serve(app, env.PORT, env.HOST, logger);
  logger.info({ port: served.port }, 'catalogue listening');
  return { stop: () => served.shutdown(), logger };
});
