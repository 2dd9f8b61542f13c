import type { GatewayService } from '@gateway/service-kit';
import type { openJobs } from './open';

/**
 * Jobs in the one lifecycle. It drains before the bus closes: the worker's last steps and the outbox relay publish
 * through it. With `storageIsOwn` (embedded) its database is part of readiness; in the fleet it is a dependency.
 */
export function jobsService(jobs: Awaited<ReturnType<typeof openJobs>>, opts: { storageIsOwn?: boolean } = {}): GatewayService {
  return {
    name: 'jobs',
    routers: { public: jobs.service.router },
    start: () => jobs.service.start(),
    ready: opts.storageIsOwn ? jobs.ping : undefined,
    drain: jobs.close,
  };
}
