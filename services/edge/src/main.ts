import '@gateway/service-kit/tracing-register';
import { createBillingHttpClient } from '@gateway/billing-client';
import { loadFleetConfig, parseDuration, readFleetEnv, serviceUrl } from '@gateway/config';
import { createMemoryMeter, createRedisMeter } from '@gateway/ratelimit';
import { createLogger, createMetrics, runMain, serveFleetProcess } from '@gateway/service-kit';
import { ADMIN_OWNER, SERVICE_NAMES, type ServiceName } from '@gateway/topology';
import type { RequestHandler } from 'express';
import { createEdge } from './index';
import { deployed, notDeployed, proxyTo } from './proxy';

/** Fleet entry: the public listener, proxying each path to the service the service table names. */
runMain('edge', async () => {
  const env = readFleetEnv('edge');
  const logger = createLogger('edge', env.LOG_LEVEL);
  const { public_rate_limit: publicRate } = loadFleetConfig(env, 'edge').limits;
  const billing = createBillingHttpClient(serviceUrl(env, 'billing', 'the edge'), env.GATEWAY_INTERNAL_TOKEN);
  const meter = env.REDIS_URL ? createRedisMeter(env.REDIS_URL, { prefix: env.GATEWAY_METER_PREFIX }) : createMemoryMeter();
  // billing verifies every key, so the edge needs it; any other service may be left out of a deployment (the chart's
  // services.<name>.enabled), and its routes then answer 404 instead of the edge refusing to start.
  const services = Object.fromEntries(
    SERVICE_NAMES.map((name) => [name, name === 'billing' || deployed(env, name) ? proxyTo(serviceUrl(env, name, 'the edge')) : notDeployed(name)]),
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
  const served = await serveFleetProcess(listener, env, {
    service: 'edge',
    public: true,
    logger,
    metrics,
    // Ready whatever billing does: keyless routes (the catalogue) need no billing, and a keyed call during its outage
    // gets the retryable 503 envelope. The billing check shows on /healthz and gateway_dependency_up.
    ready: async () => undefined,
    dependencies: { billing: () => billing.ping() },
    onDrained: async () => {
      await meter.close();
      await billing.close();
    },
  });
  return { stop: () => served.shutdown(), logger };
});
