import { Router } from 'express';
import { jsonBody } from '@gateway/service-kit';
import type { JobSettingsPort } from '@gateway/billing-client';
import type { Subscription } from '@gateway/bus';
import type { GatewayConfig } from '@gateway/config';
import { parseDuration } from '@gateway/config';
import type { Db } from '@gateway/db';
import type { SpendDeps } from '@gateway/spend';
import { createProtocols } from '@gateway/upstreams';
import { mountList } from './list/handler';
import type { MediaFilesPort } from './media/port';
import { mountReads } from './read/handlers';
import { followSettlements } from './settled';
import { createRelay } from './store/relay';
import { mountSubmit } from './submit/handler';
import { endpointOf } from './worker/drive';
import { createWorker } from './worker/worker';
import { createWebhookDispatcher, type Resolver } from './webhooks';

export interface JobsServiceDeps extends SpendDeps {
  db: Db;
  accounts: JobSettingsPort;
  media: MediaFilesPort;
  /** GATEWAY_PUBLIC_URL: status, response and cancel URLs, and the result's file URLs, are absolute under it. */
  publicUrl: string;
  /** Tests only: the webhook address guard's DNS. */
  resolve?: Resolver;
  /**
   * This process alone writes the jobs database (the embedded gateway on its own PGlite). Every job, outbox row and
   * delivery it must act on is then written by itself and wakes the worker, relay or dispatcher in process, and
   * every later due time is one they read after each pass: they set timers for those and never poll. Otherwise (the
   * fleet, several replicas on one PostgreSQL) they also look every few seconds for work another replica wrote or
   * left behind when it died: LISTEN/NOTIFY could replace that, at the price of a connection held per replica.
   */
  soleOwner?: boolean;
}

/** How often a replica that shares its database looks for work no wake announced (see soleOwner). */
const SAFETY_POLL_MS = { worker: 5_000, relay: 5_000, webhooks: 1_000 };

export interface JobsService {
  router: Router;
  start(): Promise<void>;
  /** Stops taking work, waits for the steps and sends in flight, publishes what the outbox still holds. */
  stop(): Promise<void>;
  /** Runs the worker, the relay and the dispatcher once now (tests and drain). */
  kick(): Promise<void>;
}

/**
 * The job queue: routes (submit, status, result, cancel, content, list), the worker that drives jobs upstream, the
 * outbox relay that publishes their events and hold closes, and the webhook dispatcher. Every replica runs all four;
 * leases keep two of them from driving one job or sending one delivery.
 */
export function createJobsService(deps: JobsServiceDeps, config: GatewayConfig): JobsService {
  const protocols = createProtocols(deps);
  const relay = createRelay(deps.db, deps.bus, deps.logger);
  const dispatcher = createWebhookDispatcher({
    db: deps.db,
    secretOf: async (accountId) => (await deps.accounts.jobSettings(accountId)).webhookSecret,
    settings: {
      maxRetries: config.webhooks.max_retries,
      initialBackoffMs: config.webhooks.initial_backoff_ms,
      allowPrivateAddresses: config.webhooks.allow_private_addresses,
    },
    logger: deps.logger,
    metrics: deps.metrics,
    resolve: deps.resolve,
  });
  const onCommitted = () => {
    relay.wake();
    dispatcher.wake();
  };
  const transitions = { db: deps.db, bus: deps.bus, logger: deps.logger, metrics: deps.metrics, onCommitted };
  const driveDeps = {
    ...transitions,
    spend: { ...deps, holdTtlMs: undefined },
    media: deps.media,
    publicUrl: deps.publicUrl,
    protocolOf: protocols.queue,
    pollIntervalMs: parseDuration(config.jobs.poll_interval),
    timeoutMs: parseDuration(config.jobs.timeout),
  };
  const worker = createWorker(driveDeps, {
    leaseMs: parseDuration(config.jobs.lease),
    idleMs: deps.soleOwner ? Number.POSITIVE_INFINITY : SAFETY_POLL_MS.worker,
  });

  const router = Router();
  router.use(jsonBody(config.limits.max_request_body));
  mountSubmit(router, {
    ...deps,
    // A job's hold outlives any synchronous one: it lasts as long as the job may run, and a little more.
    holdTtlMs: parseDuration(config.jobs.timeout) + 60 * 60_000,
    defaultConcurrency: config.limits.job_concurrency,
    onSubmitted: () => {
      relay.wake();
      worker.wake();
    },
  });
  mountReads(router, {
    ...transitions,
    media: deps.media,
    async cancelUpstream(job) {
      const endpoint = endpointOf(driveDeps, job);
      const protocol = endpoint && protocols.queue(endpoint.provider.kind);
      if (endpoint && protocol && job.ticket) await protocol.cancel(endpoint, job.ticket, { signal: AbortSignal.timeout(30_000) });
    },
  });
  mountList(router, deps);

  let settlements: Subscription | undefined;
  return {
    router,
    async start() {
      settlements = await followSettlements(deps.db, deps.registry, deps.bus, deps.logger);
      relay.start(deps.soleOwner ? undefined : SAFETY_POLL_MS.relay);
      worker.start();
      dispatcher.start(deps.soleOwner ? undefined : SAFETY_POLL_MS.webhooks);
    },
    async stop() {
      await worker.stop();
      await dispatcher.stop();
      await relay.stop();
      await settlements?.close();
    },
    async kick() {
      await worker.tick();
      await relay.drain();
      await dispatcher.runDue();
    },
  };
}
