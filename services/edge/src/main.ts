import '@gateway/service-kit/tracing-register';
import { createBillingHttpClient } from '@gateway/billing-client';
import { loadFleetConfig, parseDuration, readFleetEnv, serviceUrl } from '@gateway/config';
import { createMemoryMeter, createRedisMeter } from '@gateway/ratelimit';
import { createLogger, createMetrics, runFleetProcess } from '@gateway/service-kit';
import { ADMIN_OWNER, SERVICE_NAMES, type ServiceName } from '@gateway/topology';
import type { RequestHandler } from 'express';
import { createEdge } from './index';
import { deployed, notDeployed, proxyTo } from './proxy';

/** Fleet entry: the public listener, proxying each path to the service the service table names. */
runFleetProcess('edge', async () => {
  const env = readFleetEnv('edge');
  const logger = createLogger('edge', env.LOG_LEVEL);
  const { public_rate_limit: publicRate } = loadFleetConfig(env, 'edge').limits;
  const billing = createBillingHttpClient(serviceUrl(env, 'billing', 'the edge'), env.GATEWAY_INTERNAL_TOKEN);
  const meter = env.REDIS_URL ? createRedisMeter(env.REDIS_URL, { prefix: env.GATEWAY_METER_PREFIX }) : createMemoryMeter();
  // billing verifies every key, so the edge needs it; any other service may be left out of a deployment (the chart's
  // services.<name>.enabled), and its routes then answer 404 instead of the edge refusing to start.
  const services = Object.fromEntries(
    SERVICE_NAMES.map((name) => [
      name,
      name === 'billing' || deployed(env, name) ? proxyTo(serviceUrl(env, name, 'the edge'), logger) : notDeployed(name),
    ]),
  ) as Record<ServiceName, RequestHandler>;
  const metrics = createMetrics();
  const { listener } = createEdge({
    billing,
    meter,
    logger,
    metrics,
    services,
    admin: services[ADMIN_OWNER],
    internalToken: env.GATEWAY_INTERNAL_TOKEN,
    publicRateLimit: { requests: publicRate.requests, intervalMs: parseDuration(publicRate.interval) },
    trustProxy: env.TRUST_PROXY,
  });
  return {
    env,
    logger,
    metrics,
    public: true,
    // No part has a readiness of its own: the edge is ready whatever billing does. Keyless routes (the catalogue)
    // need no billing, and a keyed call during its outage gets the retryable 503 envelope; the billing check shows
    // on /healthz and gateway_dependency_up.
    parts: [
      { name: 'billing client', close: () => billing.close() },
      { name: 'meter', close: () => meter.close() },
    ],
    listener,
    dependencies: { billing: () => billing.ping() },
  };
});
