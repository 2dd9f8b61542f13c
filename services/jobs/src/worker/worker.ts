import crypto from 'node:crypto';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import type { Db } from '@gateway/db';
import type { Logger } from '@gateway/service-kit';
import { claimDue, nextClaimIn, releaseLease } from '../store/jobs';
import { type DriveDeps, driveJob, pollDelay } from './drive';

const tracer = trace.getTracer('@gateway/jobs');

export interface WorkerOptions {
  leaseMs: number;
  /** Jobs driven at once by this worker. */
  concurrency?: number;
  /**
   * The longest the worker sleeps when nothing is due (5 s): how late it may notice a job that no wake announced,
   * such as one written by a replica that died before driving it. Otherwise it sleeps until the next job is due.
   * Infinity when this process alone writes its jobs (embedded): every submission wakes it, every job it has is
   * due at a time it reads after each pass, so an idle worker sets no timer at all.
   */
  idleMs?: number;
}

/** The shortest sleep between passes, so a job due again at once cannot spin the worker. */
const SOONEST_MS = 20;
/** The sleep after a pass that could not read the database: a retry, without a log line per millisecond. */
const RETRY_MS = 500;
/** setTimeout's longest delay (about 24.8 days); a longer one would fire at once. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * The job worker: leases due jobs and drives each one step. Any number run against one database (one per
 * replica): a job is driven only under its lease, and a lease a dead worker held lapses, so another takes it over.
 */
export function createWorker(deps: DriveDeps & { db: Db; logger: Logger }, opts: WorkerOptions) {
  const owner = `worker_${crypto.randomBytes(6).toString('hex')}`;
  const concurrency = opts.concurrency ?? 8;
  const idleMs = opts.idleMs ?? 5_000;
  let timer: NodeJS.Timeout | undefined;
  let started = false;
  let stopped = false;
  let ticking: Promise<void> | undefined;
  let again = false;

  async function tickOnce(): Promise<number> {
    const jobs = await claimDue(deps.db, owner, opts.leaseMs, concurrency);
    await Promise.all(
      jobs.map(async (job) => {
        // One span per step: its upstream calls and database writes nest under it.
        await tracer.startActiveSpan('jobs step', { attributes: { 'gateway.job.id': job.id, 'gateway.job.status': job.status } }, async (span) => {
          try {
            await driveJob(deps, job, owner);
          } catch (err) {
            span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
            deps.logger.warn({ err, jobId: job.id }, 'job step failed; trying again later');
            await releaseLease(deps.db, job.id, owner, pollDelay(deps.pollIntervalMs, job.polls)).catch(() => undefined);
          } finally {
            span.end();
          }
        });
      }),
    );
    return jobs.length;
  }

  /**
   * Sleeps until the next job is due (or its lease lapses), between SOONEST_MS and idleMs. An idle gateway then
   * reads its jobs table once per idleMs (never, with idleMs Infinity) instead of four times a second, and a due
   * job is driven when it is due rather than at the next poll.
   */
  async function sleepUntilDue(failed: boolean): Promise<void> {
    let ms = failed ? RETRY_MS : idleMs;
    if (!failed) {
      try {
        ms = Math.min(idleMs, (await nextClaimIn(deps.db)) ?? idleMs);
      } catch (err) {
        deps.logger.error({ err }, 'job worker could not read when the next job is due');
        ms = RETRY_MS;
      }
    }
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (stopped || ms === Number.POSITIVE_INFINITY) return;
    timer = setTimeout(() => void tick(), Math.min(LONGEST_TIMER_MS, Math.max(SOONEST_MS, ms)));
    timer.unref();
  }

  /** One pass at a time; a wake during a pass (or while it picks its sleep) runs another right after it. */
  function tick(): Promise<void> {
    if (ticking) {
      again = true;
      return ticking;
    }
    ticking = (async () => {
      do {
        again = false;
        if (stopped) break;
        let failed = false;
        try {
          while (!stopped && (await tickOnce()) === concurrency) {}
        } catch (err) {
          failed = true;
          deps.logger.error({ err }, 'job worker pass failed');
        }
        if (started && !again) await sleepUntilDue(failed);
      } while (again);
    })().finally(() => {
      ticking = undefined;
    });
    return ticking;
  }

  return {
    owner,
    tick,
    wake() {
      void tick();
    },
    start() {
      started = true;
      void tick();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await ticking;
      if (timer) clearTimeout(timer);
    },
  };
}
export type Worker = ReturnType<typeof createWorker>;
