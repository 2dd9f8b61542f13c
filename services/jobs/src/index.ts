// The package's entry: re-exports only, so no module of the package needs to import it back (docs/decisions/007).
export { createJobsService, type JobsService, type JobsServiceDeps } from './service';
export { migrations } from './migrations';
export { jobsService } from './gateway-service';
export { openJobs, type JobsOptions } from './open';
export { inProcessMediaFiles } from './media/in-process';
export { verifyWebhook } from './webhooks';
export { httpMediaFiles } from './media/http';
export type { MediaFilesPort } from './media/port';
