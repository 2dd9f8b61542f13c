import crypto from 'node:crypto';
import os from 'node:os';
import type { Db } from '@gateway/db';
import type { Logger, Metrics } from '@gateway/service-kit';
import { z } from 'zod';
import type { Resolver } from './address-guard';
import { retryDelayMs } from './backoff';
import { type AttemptResult, DEFAULT_ATTEMPT_TIMEOUT_MS, sendWebhook } from './send';
import { abandon, type ClaimedDelivery, claimDue, finishAttempt, type NextStep, nextDueIn } from './store';

/** The operator's `webhooks` keys, camelCased. */
export const webhookSettingsSchema = z.object({
  maxRetries: z.number().int().min(0),
  initialBackoffMs: z.number().int().positive(),
  allowPrivateAddresses: z.boolean(),
});
export type WebhookSettings = z.infer<typeof webhookSettingsSchema>;

export interface WebhookDispatcherOptions {
  db: Db;
  /** The account's current signing secret; read at every attempt, so a rotation applies to the next retry. */
  secretOf(accountId: string): Promise<string>;
  settings: WebhookSettings;
  logger: Logger;
  metrics?: Metrics;
  /** Milliseconds since the epoch; the clock for the signed timestamp and sent_at. */
  now?: () => number;
  /** Names this replica's leases; unique per process. */
  owner?: string;
  /** Sends in flight at once, and deliveries claimed per round. */
  concurrency?: number;
  timeoutMs?: number;
  /** Tests only: the DNS resolver of the address guard. */
  resolve?: Resolver;
  /** Tests only: the jitter's randomness. */
  random?: () => number;
}

export interface WebhookDispatcher {
  /** Sends every delivery due now, a round of `concurrency` at a time; resolves to the number of attempts made. */
  runDue(): Promise<number>;
  /** Runs now, e.g. right after the jobs code ended a job, instead of waiting for its timer. */
  wake(): void;
  /**
   * Runs now, then again whenever the next pending delivery is due (a retry's backoff, a lapsed lease) and whenever
   * woken. `safetyPollMs` caps the sleep, for deliveries another replica wrote and no wake here announced; without it
   * (one process alone on its database, embedded) an idle dispatcher sets no timer and reads nothing.
   */
  start(safetyPollMs?: number): void;
  /** Stops its timer and waits for the sends in flight to be made and recorded. */
  stop(): Promise<void>;
}

/**
 * Delivers the rows the jobs code writes into webhook_deliveries. Several replicas may run one each on the same database:
 * a delivery is claimed under a lease before it is sent, so each attempt is made by one of them only.
 */
/** The sleep after a round or a due-time read that failed, before trying again. */
const RETRY_MS = 1_000;
/** The shortest sleep, so a delivery due again at once cannot spin the dispatcher. */
const SOONEST_MS = 20;
/** setTimeout's longest delay (about 24.8 days); a longer one would fire at once. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

export function createWebhookDispatcher(opts: WebhookDispatcherOptions): WebhookDispatcher {
  const settings = webhookSettingsSchema.parse(opts.settings);
  const now = opts.now ?? Date.now;
  const owner = opts.owner ?? `${os.hostname()}:${process.pid}:${crypto.randomBytes(4).toString('hex')}`;
  const concurrency = Math.max(1, opts.concurrency ?? 8);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  // A round lasts at most the secret lookup plus one send, each bounded by timeoutMs; the margin covers the database.
  // A lease shorter than that could let a second replica re-send an attempt still in flight.
  const leaseMs = 2 * timeoutMs + 30_000;
  const maxAttempts = 1 + settings.maxRetries;
  const log = opts.logger.child({ component: 'webhooks' });
  const attemptsMetric = opts.metrics?.counter('gateway_webhook_attempts_total', 'Webhook delivery attempts, by outcome', ['outcome']);
  const durationMetric = opts.metrics?.histogram(
    'gateway_webhook_attempt_duration_seconds',
    'Time of one webhook delivery attempt, by outcome',
    ['outcome'],
    [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );

  let stopping = false;
  let started = false;
  let safetyMs = Number.POSITIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  // Due-time reads may overlap (a wake's round ends while the timer's does): only the latest one sets the timer.
  let scheduling = 0;
  let current: Promise<number> | null = null;
  let queued: Promise<number> | null = null;

  async function attempt(d: ClaimedDelivery): Promise<void> {
    if (d.attempts > maxAttempts) {
      // The previous owner counted its attempt and died before recording it: nothing is left to try.
      await abandon(opts.db, owner, d);
      log.warn({ delivery: d.id, job: d.job_id }, 'webhook delivery failed: attempts exhausted (last outcome unknown)');
      return;
    }
    const sentAtMs = now();
    const timestamp = Math.floor(sentAtMs / 1000);
    const secret = await withTimeout(opts.secretOf(d.account_id), timeoutMs).catch((e: Error) => e);
    const result: AttemptResult =
      secret instanceof Error
        ? { outcome: 'connection_error', statusCode: null, error: `not sent: no webhook secret (${secret.message})`, durationMs: 0 }
        : await sendWebhook({
            url: d.url,
            id: d.id,
            body: d.body,
            secret,
            timestamp,
            allowPrivateAddresses: settings.allowPrivateAddresses,
            timeoutMs,
            resolve: opts.resolve,
          });
    const next: NextStep =
      result.outcome === 'delivered'
        ? { state: 'delivered' }
        : d.attempts < maxAttempts
          ? { state: 'pending', delayMs: retryDelayMs(d.attempts, settings.initialBackoffMs, opts.random) }
          : { state: 'failed' };
    const held = await finishAttempt(opts.db, owner, d, { sentAt: new Date(sentAtMs), timestamp, result }, next);
    attemptsMetric?.inc({ outcome: result.outcome });
    durationMetric?.observe({ outcome: result.outcome }, result.durationMs / 1000);
    const fields = { delivery: d.id, job: d.job_id, attempt: d.attempts, status: result.statusCode, error: result.error, next: next.state };
    if (!held) log.warn(fields, 'webhook attempt recorded after its lease was lost; the delivery is left to its new owner');
    else if (next.state === 'delivered') log.info(fields, 'webhook delivered');
    else if (next.state === 'failed') log.warn(fields, 'webhook delivery failed: no retries left');
    else log.info({ ...fields, retry_in_ms: next.delayMs }, 'webhook attempt failed; retrying later');
  }

  async function runOnce(): Promise<number> {
    let made = 0;
    while (!stopping) {
      const batch = await claimDue(opts.db, owner, concurrency, leaseMs);
      if (batch.length === 0) break;
      const settled = await Promise.allSettled(batch.map((d) => attempt(d)));
      for (const s of settled)
        if (s.status === 'rejected') log.error({ err: s.reason }, 'webhook attempt could not be recorded; its lease will expire');
      made += batch.length;
    }
    return made;
  }

  function runDue(): Promise<number> {
    if (!current) {
      current = runOnce().finally(() => {
        current = null;
      });
      return current;
    }
    // A run is under way; one more after it catches whatever became due meanwhile, however many ask.
    queued ??= current
      .catch(() => 0)
      .then(() => {
        queued = null;
        return runDue();
      });
    return queued;
  }

  /** Sets the timer for the next due delivery, or for RETRY_MS after a failure; none when nothing is pending. */
  async function schedule(failed: boolean): Promise<void> {
    if (!started || stopping) return;
    const mine = ++scheduling;
    let ms = RETRY_MS;
    if (!failed) {
      try {
        ms = Math.min(safetyMs, (await nextDueIn(opts.db)) ?? Number.POSITIVE_INFINITY);
      } catch (err) {
        log.error({ err }, 'webhook dispatcher could not read when the next delivery is due');
      }
    }
    if (mine !== scheduling || stopping) return;
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (ms === Number.POSITIVE_INFINITY) return;
    timer = setTimeout(runLogged, Math.min(LONGEST_TIMER_MS, Math.max(SOONEST_MS, ms)));
    timer.unref();
  }

  function runLogged(): void {
    void runDue().then(
      () => schedule(false),
      (err) => {
        log.error({ err }, 'webhook dispatch round failed');
        return schedule(true);
      },
    );
  }

  return {
    runDue,
    wake: () => {
      if (!stopping) runLogged();
    },
    start(safetyPollMs) {
      stopping = false;
      started = true;
      safetyMs = safetyPollMs ?? Number.POSITIVE_INFINITY;
      runLogged();
    },
    async stop() {
      stopping = true;
      started = false;
      if (timer) clearTimeout(timer);
      timer = undefined;
      await Promise.allSettled([current, queued]);
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)))]).finally(
    () => clearTimeout(t),
  );
}
