import { billingService, createBillingService, ensureDemoAccount } from '@gateway/billing';
import { busOptionsFromEnv, openBus } from '@gateway/bus';
import { CONSUMER_GROUPS } from '@gateway/events';
import { catalogueService, openCatalogue, redisPing } from '@gateway/catalogue';
import { buildRegistry, parseDuration, type GatewayConfig, type GatewayEnv } from '@gateway/config';
import type { Db } from '@gateway/db';
import { createEdge, type KeyCache } from '@gateway/edge';
import { createMemoryMeter, createRedisMeter } from '@gateway/ratelimit';
import {
  busPart,
  createMetrics,
  type GatewayService,
  inStartOrder,
  type Lifecycle,
  listenOptionsOf,
  serve,
  startAndServe,
  type Logger,
  type Served,
} from '@gateway/service-kit';
import { Circuits, HOLD_CLOSE_RESERVE_MS, OpenHolds, type SpendDeps, spendPart, startHealthReporter } from '@gateway/spend';
import type { ServiceName } from '@gateway/topology';
import type { RequestHandler } from 'express';
import { createTextService, textService } from '@gateway/text';
import { claimTokenWorker } from '@gateway/upstreams';
import { mediaService, openMedia, s3OptionsOf } from '@gateway/media';
import { inProcessMediaFiles, jobsService, openJobs } from '@gateway/jobs';
import { createMcpService, mcpLimitsOf, mcpService } from '@gateway/mcp';
import { openEmbeddedDatabases } from './databases';

export interface EmbeddedGateway {
  served: Served;
  url: string;
  /** Probes and /metrics, on their own listener (METRICS_PORT). */
  metricsUrl: string;
  demo?: { accountId: string; key: string };
  generatedAdminToken?: string;
  /** The ledger's database, for operators' scripts and the tests' invariant checks. */
  billingDb: Db;
  /** Resolves once billingDb holds every ledger decision made before the call (the ledger is written behind). */
  ledgerFlushed(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Every service in one process, wired to each other directly (no HTTP hops between them). Adapters follow
 * the environment: PGlite, in-memory bus and meter by default; PostgreSQL, Redis or Kafka when configured.
 * `dataDir: undefined` keeps the database in memory (tests).
 */
export async function startEmbedded(
  env: GatewayEnv,
  config: GatewayConfig,
  logger: Logger,
  opts: { dataDir?: string } = {},
): Promise<EmbeddedGateway> {
  const metrics = createMetrics();
  const registry = buildRegistry(config);
  // Declared, the in-memory bus keeps for each consumer what is published before it subscribes, as a broker would.
  const bus = openBus({ ...busOptionsFromEnv(env), metrics, memory: { groups: CONSUMER_GROUPS } });
  const meter = env.REDIS_URL ? createRedisMeter(env.REDIS_URL, { prefix: env.GATEWAY_METER_PREFIX }) : createMemoryMeter();
  const dbs = await openEmbeddedDatabases({ databaseUrl: env.DATABASE_URL, dataDir: opts.dataDir }, logger);
  const { billing: billingDb, media: mediaDb, jobs: jobsDb, catalogue: catalogueDb, mcp: mcpDb } = dbs;

  let keys: KeyCache | undefined;
  const billing = await createBillingService({
    db: billingDb,
    bus,
    config,
    logger: logger.child({ service: 'billing' }),
    adminToken: env.GATEWAY_ADMIN_TOKEN,
    metrics,
    onKeyRevoked: (keyId) => keys?.evictKeyId(keyId),
    // One process owns these databases: the ledger lives in memory, journalled, and is written behind.
    inMemory: {
      dataDir: opts.dataDir,
      // A job's hold outlives the process that placed it (the next worker closes it); any other open hold was a
      // request of a dead process, and is released.
      liveJobHolds: async () =>
        (await jobsDb.query<{ id: string }>(`SELECT hold->>'hold_id' AS id FROM jobs WHERE status IN ('queued', 'running')`)).map((r) => r.id),
    },
  });
  const demo = await ensureDemoAccount(billingDb);
  // One set of circuits: an endpoint that fails for one route is the same endpoint for another.
  const circuits = new Circuits();
  const openHolds = new OpenHolds();
  const holdTtlMs = parseDuration(config.limits.hold_ttl);
  const spendDeps = (service: string): SpendDeps => ({
    registry,
    billing: billing.port,
    bus,
    circuits,
    logger: logger.child({ service }),
    metrics,
    openHolds,
    holdTtlMs,
  });
  const text = createTextService({ ...spendDeps('text'), replays: billing.port }, { maxRequestBody: config.limits.max_request_body });
  const media = await openMedia(config, spendDeps('media'), {
    db: mediaDb,
    dataDir: opts.dataDir,
    publicUrl: env.GATEWAY_PUBLIC_URL,
    s3: s3OptionsOf(env),
  });
  const jobs = await openJobs(
    config,
    spendDeps('jobs'),
    { accounts: billing.port, media: inProcessMediaFiles({ keep: media.service.keep, router: media.service.router }) },
    // On its own PGlite no other process writes the jobs: they wait on timers and wakes, never on a poll.
    { db: jobsDb, publicUrl: env.GATEWAY_PUBLIC_URL, soleOwner: !env.DATABASE_URL },
  );
  // The status monitor's api check calls this gateway's own public listener, whose port is known once it listens.
  let statusApiUrl: string | undefined;
  const redis = env.REDIS_URL ? redisPing(env.REDIS_URL) : undefined;
  const catalogue = await openCatalogue({
    config,
    bus,
    logger: logger.child({ service: 'catalogue' }),
    db: catalogueDb,
    probes: {
      apiUrl: () => env.STATUS_API_URL ?? statusApiUrl,
      billingPing: () => billing.port.ping(),
      storage: [
        { name: 'billing database', ping: () => billingDb.ping() },
        { name: 'media database', ping: () => media.ping() },
        ...(redis ? [redis] : []),
      ],
    },
  });
  // Its tools call this very gateway's public listener, whose address is known once it listens (below).
  let selfUrl = '';
  const mcp = createMcpService(
    { db: mcpDb, bus, registry, logger: logger.child({ service: 'mcp' }), meter, edgeUrl: () => selfUrl },
    { maxRequestBody: config.limits.max_request_body, limits: mcpLimitsOf(config) },
  );
  // One process on its own storage: every service's database is this pod's, so it counts for readiness.
  const own = { storageIsOwn: true };
  const byName = {
    billing: billingService(billing, own),
    text: textService(text),
    media: mediaService(media, own),
    jobs: jobsService(jobs, own),
    catalogue: catalogueService(catalogue),
    mcp: mcpService(mcp),
  } satisfies Record<ServiceName, GatewayService>;
  const edge = createEdge({
    billing: billing.port,
    meter,
    logger,
    metrics,
    // Embedded, each entry of the service table is served by its router in this process.
    services: Object.fromEntries(Object.values(byName).map((s) => [s.name, s.routers.public])) as Record<ServiceName, RequestHandler>,
    admin: billing.adminRouter,
    publicRateLimit: rateOf(config.limits.public_rate_limit),
    trustProxy: env.TRUST_PROXY,
  });
  keys = edge.keys;

  let releaseTokenWorker: (() => Promise<void>) | undefined;
  const parts: Lifecycle[] = [
    {
      name: 'shared',
      // Known once the listener answers: the status monitor's api check and the MCP tools call it.
      listening: (url) => {
        statusApiUrl = url;
        selfUrl = url;
      },
      async close() {
        await redis?.close();
        await meter.close();
        await billingDb.close();
        await mcpDb.close();
      },
    },
    {
      name: 'token worker',
      // The text routes count tokens in a worker thread (started on first use). Claimed once listening: a start that
      // failed before (a port taken, which the tests retry) has nothing to release. Released after every drain, so
      // after the cut streams' holds are closed with what they delivered: those were the last counts.
      listening: () => {
        releaseTokenWorker = claimTokenWorker();
      },
      close: async () => releaseTokenWorker?.(),
    },
    // It closes once jobs (whose outbox relay publishes what the last steps wrote) and mcp have drained, and before
    // billing closes: it delivers the settles still queued while billing is still consuming them.
    // A consumer stopped for good fails readiness: in one process on its own storage, every check is this pod's own.
    busPart(bus, 'drain'),
    ...inStartOrder(Object.values(byName)),
    spendPart({
      openHolds,
      logger,
      // What this process's upstream traffic saw, for the monitor's providers check (the fleet's spending services do the same).
      startHealth: () =>
        config.status.enabled
          ? startHealthReporter({ bus, circuits, registry, logger, source: 'gateway', intervalMs: parseDuration(config.status.sample_interval) })
          : undefined,
    }),
  ];
  const running = await startAndServe(parts, {
    logger,
    host: env.HOST,
    listen: (hooks) =>
      serve(edge.listener, {
        service: 'gateway',
        ...listenOptionsOf(env, true),
        logger,
        metrics,
        drainReserveMs: HOLD_CLOSE_RESERVE_MS,
        ...hooks,
      }),
  });
  const { served } = running;
  const host = env.HOST.includes(':') ? `[${env.HOST}]` : env.HOST;
  return {
    served,
    url: `http://${host}:${served.port}`,
    metricsUrl: `http://${host}:${served.metricsPort}`,
    demo,
    generatedAdminToken: billing.generatedAdminToken,
    billingDb,
    ledgerFlushed: billing.ledgerFlushed,
    stop: running.stop,
  };
}

const rateOf = (r: { requests: number; interval: string }) => ({ requests: r.requests, intervalMs: parseDuration(r.interval) });
