import type { EventBus, Subscription } from '@gateway/bus';
import { buildRegistry, type GatewayConfig, parseDuration } from '@gateway/config';
import { type Db, openServiceDb } from '@gateway/db';
import type { Logger } from '@gateway/service-kit';
import { recordFirstSeen } from './catalog/first-seen';
import { type CatalogueService, createCatalogueService } from './service';
import { migrations } from './migrations';
import type { SharedAnswers } from './shared-answers';
import { consumeCatalogueEvents } from './stats/consumer';
import { UsageTally } from './stats/usage-tally';
import { StatsStore } from './stats/store';
import { apiCheck, httpProbe, paymentsCheck, providersCheck, type StoragePing, storageCheck } from './status/checks';
import { StatusMonitor } from './status/monitor';
import { StatusStore } from './status/store';

export interface CatalogueDeps {
  config: GatewayConfig;
  bus: EventBus;
  logger: Logger;
  /** PostgreSQL for the catalogue schema (fleet); absent, PGlite under dataDir (embedded) or in memory. */
  databaseUrl?: string;
  dataDir?: string;
  /** Already open (the embedded gateway opens every service's database at once); its migrations are this service's. */
  db?: Db;
  /** What the status monitor measures. `apiUrl` is read at each sample (the embedded listener's port is known late). */
  probes: { apiUrl: () => string | undefined; billingPing?: () => Promise<void>; storage: StoragePing[] };
  now?: () => Date;
  /** The fleet's replicas keep one stats answer for all here (Redis); absent, each keeps its own. */
  shared?: SharedAnswers;
}

export interface OpenCatalogue {
  service: CatalogueService;
  /** Subscribes to billing's and the spending services' events; call before billing announces its accounts. */
  subscribe(): Promise<void>;
  /** Starts sampling; call once the public API listens (the api check calls it). */
  startMonitor(): void;
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The catalogue with its database, event consumers and status monitor, as the embedded gateway and the fleet open it. */
export async function openCatalogue(deps: CatalogueDeps): Promise<OpenCatalogue> {
  const { config, bus, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const db = deps.db ?? (await openServiceDb('catalogue', migrations, { databaseUrl: deps.databaseUrl, dataDir: deps.dataDir }));
  const registry = buildRegistry(config);
  const stats = new StatsStore(db);
  const statusStore = new StatusStore(db);
  const intervalMs = parseDuration(config.status.sample_interval);
  const clock = () => now().getTime();
  const monitor = config.status.enabled
    ? new StatusMonitor({
        store: statusStore,
        intervalMs,
        now,
        logger,
        checks: {
          api: apiCheck(deps.probes.apiUrl, clock),
          // A report older than three intervals is no longer current: the provider falls back to its probe.
          providers: providersCheck(registry, () => statusStore.reportsSince(new Date(clock() - 3 * intervalMs)), httpProbe, clock),
          storage: storageCheck([{ name: 'catalogue database', ping: () => db.ping() }, ...deps.probes.storage], clock),
          payments: paymentsCheck(deps.probes.billingPing, clock),
        },
      })
    : undefined;
  // Before the catalogue is serialised (once, at start): every model it lists has its date by then.
  const firstSeen = await recordFirstSeen(
    db,
    registry.all().map((m) => m.config.id),
    now(),
  );
  const service = createCatalogueService(registry, {
    now,
    firstSeen,
    stats: { store: stats, ttlMs: parseDuration(config.stats.cache_ttl), shared: deps.shared },
    status: { store: statusStore, monitor, now, ttlMs: Math.min(intervalMs, 15_000), logger },
  });

  const subscriptions: Subscription[] = [];
  const tally = new UsageTally(stats, logger);
  let pruner: NodeJS.Timeout | undefined;
  return {
    service,
    async subscribe() {
      tally.start();
      subscriptions.push(await consumeCatalogueEvents({ store: stats, tally, saveReport: (r) => statusStore.saveReport(r) }, bus, logger));
      pruner = setInterval(() => void stats.prune(now()).catch((err) => logger.warn({ err }, 'stats prune failed')), 3_600_000);
      pruner.unref();
    },
    startMonitor: () => monitor?.start(),
    ping: () => db.ping(),
    async close() {
      if (pruner) clearInterval(pruner);
      await monitor?.stop();
      for (const s of subscriptions) await s.close();
      await tally.stop();
      await db.close();
    },
  };
}
