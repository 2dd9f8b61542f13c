import type { JobSettingsPort } from '@gateway/billing-client';
import type { GatewayConfig } from '@gateway/config';
import { type Db, openServiceDb } from '@gateway/db';
import type { SpendDeps } from '@gateway/spend';
import { createJobsService, type JobsService } from './service';
import type { MediaFilesPort } from './media/port';
import { migrations } from './migrations';
import type { Resolver } from './webhooks';

export interface JobsOptions {
  /** PostgreSQL for the jobs schema (fleet); absent, PGlite under dataDir (embedded) or in memory. */
  databaseUrl?: string;
  dataDir?: string;
  /** Already open (the embedded gateway opens every service's database at once); its migrations are this service's. */
  db?: Db;
  publicUrl: string;
  resolve?: Resolver;
  /** No other process writes this database (embedded on PGlite): no polling, timers and wakes only (index.ts). */
  soleOwner?: boolean;
}

/** The jobs service with its database, as the embedded gateway and the fleet process both open it. */
export async function openJobs(
  config: GatewayConfig,
  spend: SpendDeps,
  ports: { accounts: JobSettingsPort; media: MediaFilesPort },
  opts: JobsOptions,
): Promise<{ service: JobsService; ping(): Promise<void>; close(): Promise<void> }> {
  const db = opts.db ?? (await openServiceDb('jobs', migrations, { databaseUrl: opts.databaseUrl, dataDir: opts.dataDir }));
  const service = createJobsService({ ...spend, ...ports, db, publicUrl: opts.publicUrl, resolve: opts.resolve, soleOwner: opts.soleOwner }, config);
  return {
    service,
    ping: () => db.ping(),
    async close() {
      await service.stop();
      await db.close();
    },
  };
}
