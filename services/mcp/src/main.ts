import '@gateway/service-kit/tracing-register';
import path from 'node:path';
import { busOptionsFromEnv, openBus } from '@gateway/bus';
import { ConfigError, buildRegistry, loadFleetConfig, readFleetEnv } from '@gateway/config';
import { openFleetServiceDb } from '@gateway/db';
import { createLogger, createMetrics, requireInternalToken, runMain, serveFleetProcess, serviceListener } from '@gateway/service-kit';
import { createRedisMeter, createMemoryMeter } from '@gateway/ratelimit';
import { createMcpService, mcpLimitsOf, migrations } from './index';

/** Fleet entry: the MCP endpoint as its own process; its tools call the edge (EDGE_URL) with each caller's key. */
runMain('mcp', async () => {
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
  const mcp = createMcpService(
    { db, bus, registry: buildRegistry(config), logger, meter, edgeUrl: () => edgeUrl },
    { maxRequestBody: config.limits.max_request_body, limits: mcpLimitsOf(config) },
  );
  await mcp.start();

  const served = await serveFleetProcess(
    serviceListener(logger, requireInternalToken(env.GATEWAY_INTERNAL_TOKEN, env.GATEWAY_INTERNAL_TOKEN_ACCEPTED), mcp.router),
    env,
    {
      service: 'mcp',
      extra: { edgeUrl },
      logger,
      metrics,
      // Ready while its consumers can run; its database and the bus are shared dependencies (serve.ts), shown on
      // /healthz. A consumer stopped for good is this pod's own fault, and only its restart cures it.
      ready: async () => bus.checkConsumers(),
      dependencies: { database: () => db.ping(), bus: () => bus.ping() },
      onDrained: async () => {
        await mcp.stop();
        await meter.close();
        await bus.close();
        await db.close();
      },
    },
  );
  return {
    stop: () => {
      mcp.endStreams();
      return served.shutdown();
    },
    logger,
  };
});
