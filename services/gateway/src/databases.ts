import fs from 'node:fs';
import path from 'node:path';
import { migrations as billingMigrations } from '@gateway/billing/migrations';
import { openPgliteHost, openServiceDb, type Db } from '@gateway/db';
import type { Logger } from '@gateway/service-kit';
import { SHARED_DIR, SHARED_SERVICES, sharedDbSeed } from './early-databases';
import { type SharedService, upgradeToSharedLayout } from './shared-layout-upgrade';

export interface EmbeddedDatabases {
  billing: Db;
  media: Db;
  jobs: Db;
  catalogue: Db;
  mcp: Db;
  /** Where the tables are: PostgreSQL schemas (DATABASE_URL), billing's PGlite and one shared PGlite, or one PGlite per service. */
  layout: 'postgres' | 'shared' | 'per-service';
}

export { SHARED_DIR } from './early-databases';

/**
 * Every service's database for the embedded gateway. On PostgreSQL each gets its schema, as in the fleet. On PGlite,
 * billing keeps a database of its own and the other four share one, a schema each: each PGlite is a WebAssembly heap
 * (about 15 MiB of a 128 MiB heap resident idle with PGlite 0.4 and 4 MB of shared buffers; 250-320 MiB before),
 * so five made the process about 1.6 GB. Both run on the process's one PGlite thread (libs/db pglite-thread.ts).
 * Billing stays apart because other services call it inside their own transactions (a video submission places its
 * hold while it holds the jobs table's account lock), and PGlite's one session would make that call wait for the
 * very transaction waiting on it; two databases are two sessions, each with its own queue on that thread. A data
 * directory written with a PGlite per service is moved onto the shared one at start (shared-layout-upgrade.ts);
 * should that fail, it runs as it was.
 */
export async function openEmbeddedDatabases(opts: { databaseUrl?: string; dataDir?: string }, logger: Logger): Promise<EmbeddedDatabases> {
  const { dataDir } = opts;
  let perService = false;
  if (!opts.databaseUrl && dataDir !== undefined) {
    try {
      await upgradeToSharedLayout(dataDir, SHARED_DIR, SHARED_SERVICES, logger);
    } catch (err) {
      // Once the shared database is in place it holds everything; before, the old ones are untouched and still serve.
      perService = !fs.existsSync(path.join(dataDir, SHARED_DIR));
      logger.error(
        { err, dataDir },
        `could not finish moving the per-service databases into the shared one; ${perService ? 'running on them as they are' : 'running on the shared one'}`,
      );
    }
  }
  const host = opts.databaseUrl || perService ? undefined : openPgliteHost(dataDir && path.join(dataDir, SHARED_DIR), sharedDbSeed());
  const open = async (s: SharedService) => openServiceDb(s.name, s.migrations, { ...opts, pglite: await host });
  // The destructuring follows SHARED_SERVICES's order.
  const [billing, media, jobs, catalogue, mcp] = await Promise.all([openServiceDb('billing', billingMigrations, opts), ...SHARED_SERVICES.map(open)]);
  return { billing, media, jobs, catalogue, mcp, layout: opts.databaseUrl ? 'postgres' : perService ? 'per-service' : 'shared' };
}
