import { Router } from 'express';
import type { Db } from '@gateway/db';
import type { EventBus, Subscription } from '@gateway/bus';
import type { BillingPort, JobSettingsPort, ReplayPort } from '@gateway/billing-client';
import type { GatewayConfig } from '@gateway/config';
import type { Logger, Metrics } from '@gateway/service-kit';
import { createLedger, sweepHolds, type Ledger } from './ledger/holds';
import { MemoryLedger, journalDirOf } from './ledger/memory/memory-ledger';
import { verifyKey } from './ledger/keys';
import { jobSettings } from './ledger/job-settings';
import { mountKey } from './routes/key';
import { mountCredits } from './routes/credits';
import { mountGeneration } from './routes/generation';
import { mountGenerations } from './routes/generations';
import { mountActivity } from './routes/activity';
import { type AdminLedgerAccess, adminRouter, tablesOnly } from './admin/router';
import { resolveAdminToken } from './admin/auth';
import { internalRouter } from './internal/router';
import { consumeHoldCloses } from './consumers';
import { replayStore } from './replays/store';
import { announceAccounts, publishAccountOpened, publishExpiryCharges } from './publish';
import { migrations } from './migrations';

export { migrations };
export { ensureDemoAccount } from './demo-account';
export { deadLetterFileOf } from './ledger/memory/memory-ledger';

export interface BillingServiceDeps {
  db: Db;
  bus: EventBus;
  config: GatewayConfig;
  logger: Logger;
  adminToken?: string;
  internalToken?: string;
  /** One more token the internal routes accept, never sent (GATEWAY_INTERNAL_TOKEN_ACCEPTED, token rotation). */
  acceptedInternalToken?: string;
  /** How often expired holds are released. */
  sweepIntervalMs?: number;
  /** How often replay records past their 24 hours are deleted; a minute. */
  replaySweepIntervalMs?: number;
  /** Told when the admin API revokes a key, so an in-process edge can drop it from its cache at once. */
  onKeyRevoked?: (keyId: string) => void;
  /**
   * The embedded gateway's ledger: authoritative in this one process, journalled under `dataDir` and written
   * behind to PGlite (ledger/memory/). Only on PGlite, which no other process can open; PostgreSQL keeps the SQL
   * ledger, whose row locks are what lets several processes share it.
   */
  inMemory?: { dataDir?: string; liveJobHolds?: () => Promise<string[]> };
  /** The process's registry, for the in-memory ledger's dead-letter count. */
  metrics?: Metrics;
}

export interface BillingService {
  /** The synchronous port other services call (in-process object; the fleet reaches it via internalRouter). */
  port: BillingPort & JobSettingsPort & ReplayPort;
  /** Keyed public routes: /v1/key, /v1/credits, /v1/generation, /v1/generations, /v1/activity. */
  publicRouter: Router;
  /** /admin/v1/*, matched on the full path. */
  adminRouter: Router;
  /** /internal/* for the fleet. */
  internalRouter: Router;
  /** Set when this start generated the admin token; print it once. */
  generatedAdminToken?: string;
  /** Resolves once the tables hold every ledger decision made before the call (in-memory ledger; at once otherwise). */
  ledgerFlushed(): Promise<void>;
  /** Throws when this pod cannot take holds itself (a failed ledger journal). */
  ready(): Promise<void>;
  /** Its database and bus answer. */
  ping(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function createBillingService(deps: BillingServiceDeps): Promise<BillingService> {
  const { db, bus, config, logger } = deps;
  const defaultRate = config.limits.rate_limit;
  const admin = await resolveAdminToken(db, deps.adminToken);

  const memory =
    deps.inMemory && db.kind === 'pglite'
      ? await MemoryLedger.open({
          db,
          logger,
          journalDir: deps.inMemory.dataDir === undefined ? undefined : journalDirOf(deps.inMemory.dataDir),
          liveJobHolds: deps.inMemory.liveJobHolds,
          sweepIntervalMs: deps.sweepIntervalMs,
          onExpired: async (ids) => void (await publishExpiryCharges(db, bus, ids)),
          metrics: deps.metrics,
        })
      : undefined;
  const ledger: Ledger = memory ?? createLedger(db);
  const replays = replayStore(db);
  const port: BillingPort & JobSettingsPort & ReplayPort = {
    verifyKey: (raw) => verifyKey(db, raw, defaultRate),
    placeHold: (req) => ledger.placeHold(req),
    jobSettings: (accountId) => jobSettings(db, accountId),
    claimReplay: (req) => replays.claimReplay(req),
    finishReplay: (req) => replays.finishReplay(req),
    dropReplay: (req) => replays.dropReplay(req),
    ping: () => db.ping(),
  };

  const publicRouter = Router();
  // The account routes read the tables; with the in-memory ledger they first let the write-behind catch up.
  if (memory) publicRouter.use((_req, _res, next) => void memory.flushedWithin().then(() => next(), next));
  mountKey(publicRouter, db, defaultRate);
  mountCredits(publicRouter, db);
  mountGeneration(publicRouter, db);
  mountGenerations(publicRouter, db);
  mountActivity(publicRouter, db);

  let subscription: Subscription | undefined;
  let sweeper: NodeJS.Timeout | undefined;
  let replaySweeper: NodeJS.Timeout | undefined;

  return {
    port,
    publicRouter,
    adminRouter: Router().use(
      '/admin/v1',
      adminRouter(
        db,
        { rateLimit: defaultRate, jobConcurrency: config.limits.job_concurrency },
        admin.hash,
        deps.onKeyRevoked ?? (() => {}),
        (id) => {
          // A lost announcement is repaired by the next start's announceAccounts; the account itself exists already.
          publishAccountOpened(bus, id, new Date()).catch((err) => logger.warn({ err, accountId: id }, 'account.opened not published'));
        },
        memory ? memoryLedgerAccess(memory) : tablesOnly,
      ),
    ),
    internalRouter: internalRouter(port, deps.internalToken, deps.acceptedInternalToken, (err) =>
      logger.error({ err }, 'a batched hold failed unexpectedly'),
    ),
    generatedAdminToken: admin.generated,
    ledgerFlushed: () => memory?.flushed() ?? Promise.resolve(),
    async ready() {
      // A failed ledger journal refuses every hold: the process must leave the load balancer's rotation. Its
      // database and bus are shared by every replica, so their outage is a dependency's (serve.ts), not this pod's.
      memory?.ready();
      // A hold consumer stopped for good is this pod's: no settle reaches its ledger again until a restart.
      bus.checkConsumers();
    },
    async ping() {
      await db.ping();
      await bus.ping();
    },
    async start() {
      subscription = await consumeHoldCloses(ledger, bus, logger);
      // In the background: a ledger of many accounts must not hold up the start, and a failure only delays counts.
      announceAccounts(db, bus).catch((err) => logger.warn({ err }, 'announcing accounts failed; the next start retries'));
      // Expired replay records only take room: a claim already ignores one, so a late sweep changes no answer.
      replaySweeper = setInterval(() => {
        replays.sweep().catch((err) => logger.warn({ err }, 'replay record sweep failed'));
      }, deps.replaySweepIntervalMs ?? 60_000);
      replaySweeper.unref();
      if (memory) return memory.start();
      sweeper = setInterval(() => {
        sweepHolds(db)
          .then(async (ids) => {
            if (ids.length === 0) return;
            logger.warn({ released: ids.length }, 'released expired holds');
            await publishExpiryCharges(db, bus, ids);
          })
          .catch((err) => logger.error({ err }, 'hold sweep failed'));
      }, deps.sweepIntervalMs ?? 5_000);
      sweeper.unref();
    },
    async stop() {
      if (sweeper) clearInterval(sweeper);
      if (replaySweeper) clearInterval(replaySweeper);
      await subscription?.close();
      await memory?.stop();
    },
  };
}

/**
 * The admin API beside the in-memory ledger: reads wait for the write-behind, so they see every hold and charge
 * made before them; changes run with the ledger still for the time of their statements only, never of a response.
 */
function memoryLedgerAccess(memory: MemoryLedger): AdminLedgerAccess {
  return { caughtUp: () => memory.flushedWithin(), change: (work) => memory.exclusive(work) };
}
