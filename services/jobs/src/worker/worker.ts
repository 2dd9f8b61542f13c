import crypto from 'node:crypto';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import type { Db } from '@gateway/db';
import type { Logger } from '@gateway/service-kit';
import { claimDue, releaseLease } from '../store/jobs';
import { type DriveDeps, driveJob, pollDelay } from './drive';

const tracer = trace.getTracer('@gateway/jobs');

export interface WorkerOptions {
  leaseMs: number;
  /** Jobs driven at once by this worker. */
  concurrency?: number;
  tickMs?: number;
}

/**
 * The job worker: leases due jobs and drives each one step. Any number run against one database (one per
 * replica): a job is driven only under its lease, and a lease a dead worker held lapses, so another takes it over.
 */
export function createWorker(deps: DriveDeps & { db: Db; logger: Logger }, opts: WorkerOptions) {
  const owner = `worker_${crypto.randomBytes(6).toString('hex')}`;
  const concurrency = opts.concurrency ?? 8;
  let timer: NodeJS.Timeout | undefined;
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

  /** One pass at a time; a wake during a pass runs another right after it. */
  function tick(): Promise<void> {
    if (ticking) {
      again = true;
      return ticking;
    }
    ticking = (async () => {
      do {
        again = false;
        if (stopped) break;
        try {
          while (!stopped && (await tickOnce()) === concurrency) {}
        } catch (err) {
          deps.logger.error({ err }, 'job worker pass failed');
        }
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
      timer = setInterval(() => void tick(), opts.tickMs ?? 250);
      timer.unref();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await ticking;
    },
  };
}
export type Worker = ReturnType<typeof createWorker>;
