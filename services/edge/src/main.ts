import '@gateway/service-kit/src/tracing-register';
import { createBillingHttpClient } from '@gateway/billing-client';
import { loadConfig, parseDuration, readEnv } from '@gateway/config';
import { createMemoryMeter, createRedisMeter } from '@gateway/ratelimit';
import { createLogger, createMetrics, runMain, serve } from '@gateway/service-kit';
import { createEdge } from './index';
import { proxyTo } from './proxy';

function required(name: string): string {
  const v = process.env[name];
  if (!v) throw Object.assign(new Error(`${name}: required for the edge in the fleet`), { name: 'ConfigError' });
  return v;
}

/** Fleet entry: the public listener, proxying to billing, text and catalogue. */
runMain('edge', async () => {
  const env = readEnv(process.env, { host: '0.0.0.0' });
  const logger = createLogger('edge', env.LOG_LEVEL);
  const { public_rate_limit: publicRate } = loadConfig(env.GATEWAY_CONFIG).limits;
  const internalToken = process.env.GATEWAY_INTERNAL_TOKEN || undefined;
  const billingUrl = required('BILLING_URL');
  const billing = createBillingHttpClient(billingUrl, internalToken);
  const meter = env.REDIS_URL ? createRedisMeter(env.REDIS_URL) : createMemoryMeter();
  const toBilling = proxyTo(billingUrl);
  const { app } = createEdge({
    billing,
    meter,
    logger,
    metrics: createMetrics(),
    services: { billing: toBilling, text: proxyTo(required('TEXT_URL')), catalogue: proxyTo(required('CATALOGUE_URL')) },
    admin: toBilling,
    internalToken,
    ready: () => billing.ping(),
    publicRateLimit: { requests: publicRate.requests, intervalMs: parseDuration(publicRate.interval) },
    trustProxy: env.TRUST_PROXY,
  });
  const served = await serve(app, env.PORT, env.HOST, logger, async () => {
    await meter.close();
    await billing.close();
  });
  logger.info({ port: served.port }, 'edge listening');
  return { stop: () => served.shutdown(), logger };
});
