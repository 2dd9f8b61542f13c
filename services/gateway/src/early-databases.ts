import fs from 'node:fs';
import path from 'node:path';
import { migrations as billingMigrations } from '@gateway/billing/migrations';
import { migrations as catalogueMigrations } from '@gateway/catalogue/migrations';
import { readEnv } from '@gateway/config';
import { prestartPglite, serviceSeed, sharedSeed } from '@gateway/db';
import { migrations as jobsMigrations } from '@gateway/jobs/migrations';
import { migrations as mcpMigrations } from '@gateway/mcp/migrations';
import { migrations as mediaMigrations } from '@gateway/media/migrations';
import type { SharedService } from './shared-layout-upgrade';

/** The directory, under the data directory, of the PGlite the services other than billing share. */
export const SHARED_DIR = 'services';
/** The services on the shared PGlite with their migrations, each once in a PGlite of its own under `<data dir>/<name>`. */
export const SHARED_SERVICES: readonly SharedService[] = [
  { name: 'media', migrations: mediaMigrations },
  { name: 'jobs', migrations: jobsMigrations },
  { name: 'catalogue', migrations: catalogueMigrations },
  { name: 'mcp', migrations: mcpMigrations },
];

/**
 * What a new data directory's two PGlites are copied from: clusters with every migration applied (libs/db
 * seededCluster), so the first start only checks them. The same seeds whether a database starts early or not.
 */
export const billingSeed = () => serviceSeed('billing', billingMigrations);
export const sharedDbSeed = () => sharedSeed(SHARED_DIR, SHARED_SERVICES);

/**
 * `pnpm start`'s PGlites, started before the rest of the gateway's code loads: main.ts imports start-databases-early.ts
 * second, so the PGlite thread loads PGlite and opens both databases (about a second of its own core) while the main
 * thread spends about as long requiring the gateway's modules. openEmbeddedDatabases takes them over (pglite.ts keeps them by
 * directory). Only on the layout it would open as is: with DATABASE_URL, or with per-service databases still to
 * move into the shared one (shared-layout-upgrade.ts), nothing starts early.
 */
export function startDatabasesEarly(): void {
  if (process.env.GATEWAY_EARLY_DATABASES === '0') return; // to measure what it saves
  let env: ReturnType<typeof readEnv>;
  try {
    env = readEnv(process.env, { host: '127.0.0.1' });
  } catch {
    return; // main reads it again and says what is wrong
  }
  if (env.DATABASE_URL) return;
  const dataDir = path.resolve(env.GATEWAY_DATA_DIR);
  if (SHARED_SERVICES.some((s) => fs.existsSync(path.join(dataDir, s.name)))) return;
  prestartPglite(path.join(dataDir, 'billing'), billingSeed());
  prestartPglite(path.join(dataDir, SHARED_DIR), sharedDbSeed());
}
