import '@gateway/service-kit/src/tracing-register';
import { createBillingHttpClient } from '@gateway/billing-client';
import { openBus } from '@gateway/bus';
import { buildRegistry, loadConfig, readEnv } from '@gateway/config';
import { errorHandler } from '@gateway/errors';
import { INTERNAL, createLogger, createMetrics, createServiceApp, requireInternalToken, runMain, serve } from '@gateway/service-kit';
import { Circuits } from '@gateway/spend';
import { warmTokenizer } from '@gateway/upstreams';
import { createTextService } from './index';

/** Fleet entry: the text routes as their own process; holds over HTTP to billing, settles over the bus. */
runMain('text', async () => {
  const env = readEnv(process.env, { host: '0.0.0.0' });
  const config = loadConfig(env.GATEWAY_CONFIG);
  const logger = createLogger('text', env.LOG_LEVEL);
  const internalToken = process.env.GATEWAY_INTERNAL_TOKEN || undefined;
  const billingUrl = process.env.BILLING_URL;
  if (!billingUrl) throw Object.assign(new Error('BILLING_URL: required for the text service'), { name: 'ConfigError' });
  const billing = createBillingHttpClient(billingUrl, internalToken);
  const bus = openBus({ kind: env.BUS, redisUrl: env.REDIS_URL, kafkaBrokers: env.KAFKA_BROKERS, prefix: env.GATEWAY_BUS_PREFIX });
  warmTokenizer();
  const metrics = createMetrics();
  const text = createTextService({ registry: buildRegistry(config), billing, bus, circuits: new Circuits(), logger, metrics });

  const app = createServiceApp({ service: 'text', logger, metrics, ready: async () => { await billing.ping(); await bus.ping(); } });
  app.use(requireInternalToken(internalToken));
  app.use(text.router);
  app.use(errorHandler((req) => String(req.headers[INTERNAL.requestId] ?? ''), (err) => logger.error({ err }, 'unhandled error')));
  const served = await serve(app, env.PORT, env.HOST, logger, async () => {
    await bus.close();
    await billing.close();
  });
  logger.info({ port: served.port }, 'text listening');
  return { stop: () => served.shutdown(), logger };
});
