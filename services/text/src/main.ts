import '@gateway/service-kit/src/tracing-register';
import { createBillingHttpClient } from '@gateway/billing-client';
import { openBus } from '@gateway/bus';
import { buildRegistry, loadConfig, readEnv, serviceUrl } from '@gateway/config';
import { createLogger, createMetrics, createServiceApp, finishApp, requireInternalToken, runMain, serve } from '@gateway/service-kit';
import { Circuits } from '@gateway/spend';
import { warmTokenizer } from '@gateway/upstreams';
import { createTextService } from './index';

/** Fleet entry: the text routes as their own process; holds over HTTP to billing, settles over the bus. */
runMain('text', async () => {
  const env = readEnv(process.env, { host: '0.0.0.0' });
  const config = loadConfig(env.GATEWAY_CONFIG);
  const logger = createLogger('text', env.LOG_LEVEL);
  const billing = createBillingHttpClient(serviceUrl(env, 'billing', 'the text service'), env.GATEWAY_INTERNAL_TOKEN);
  const bus = openBus({ kind: env.BUS, redisUrl: env.REDIS_URL, kafkaBrokers: env.KAFKA_BROKERS, prefix: env.GATEWAY_BUS_PREFIX });
  warmTokenizer();
  const metrics = createMetrics();
  const text = createTextService(
    { registry: buildRegistry(config), billing, bus, circuits: new Circuits(), logger, metrics },
    { maxRequestBody: config.limits.max_request_body },
  );

  const app = createServiceApp();
  app.use(requireInternalToken(env.GATEWAY_INTERNAL_TOKEN));
  app.use(text.router);
  finishApp(app, logger);
  const served = await serve(app, {
    service: 'text',
    port: env.PORT,
    host: env.HOST,
    metricsPort: env.METRICS_PORT,
    logger,
    metrics,
    ready: async () => {
      await billing.ping();
      await bus.ping();
    },
    onDrained: async () => {
      await bus.close();
      await billing.close();
    },
  });
  logger.info({ port: served.port, metricsPort: served.metricsPort }, 'text listening');
  return { stop: () => served.shutdown(), logger };
});
