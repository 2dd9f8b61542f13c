import '@gateway/service-kit/tracing-register';
import path from 'node:path';
import { busOptionsFromEnv, openBus } from '@gateway/bus';
import { ConfigError, buildRegistry, loadFleetConfig, readFleetEnv } from '@gateway/config';
import { openFleetServiceDb } from '@gateway/db';
import { busPart, createLogger, createMetrics, internalListener, runFleetProcess } from '@gateway/service-kit';
import { createRedisMeter, createMemoryMeter } from '@gateway/ratelimit';
import { mcpService } from './gateway-service';
import { createMcpService, mcpLimitsOf, migrations } from './index';

/** Fleet entry: the MCP endpoint as its own process; its tools call the edge (EDGE_URL) with each caller's key. */
runFleetProcess('mcp', async () => {
  const env = readFleetEnv('mcp service');
  if (!env.EDGE_URL) throw new ConfigError('Invalid environment:\n  EDGE_URL: required for the mcp service in the fleet (its tools call the edge)');
  const edgeUrl = env.EDGE_URL.replace(/\/$/, '');
  const config = loadFleetConfig(env, 'mcp service');
  const logger = createLogger('mcp', env.LOG_LEVEL);
  const db = await openFleetServiceDb('mcp', migrations, { databaseUrl: env.DATABASE_URL, dataDir: path.resolve(env.GATEWAY_DATA_DIR), logger });
  const metrics = createMetrics();
  const bus = openBus({ ...busOptionsFromEnv(env), metrics });
  // The edge's meter (same Redis, same prefix): each message of a batch past the first counts where the edge counts.
  // Without Redis the edge meters in its own memory, and this process counts batch messages in its own.
  const meter = env.REDIS_URL ? createRedisMeter(env.REDIS_URL, { prefix: env.GATEWAY_METER_PREFIX }) : createMemoryMeter();
  const service = mcpService(
    createMcpService(
      { db, bus, registry: buildRegistry(config), logger, meter, edgeUrl: () => edgeUrl },
      { maxRequestBody: config.limits.max_request_body, limits: mcpLimitsOf(config) },
    ),
  );
  return {
    env,
    logger,
    metrics,
    extra: { edgeUrl },
    parts: [{ name: 'database', close: () => db.close() }, busPart(bus, 'close'), { name: 'meter', close: () => meter.close() }, service],
    listener: internalListener(logger, env, service.routers),
    // Ready while its consumers run (the bus part); its database and the bus are shared dependencies (serve.ts), shown on /healthz.
    dependencies: { database: () => db.ping(), bus: () => bus.ping() },
  };
});
