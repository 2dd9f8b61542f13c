import fs from 'node:fs';
import path from 'node:path';
import { readEnv } from '@gateway/config';
import { prestartPglite } from '@gateway/db';

/** The directory, under the data directory, of the PGlite the services other than billing share. */
export const SHARED_DIR = 'services';
/** The services on the shared PGlite, each once in a PGlite of its own under `<data dir>/<name>`. */
export const SHARED_SERVICES = ['media', 'jobs', 'catalogue', 'mcp'] as const;

/**
 * `pnpm start`'s PGlites, started before the rest of the gateway's code loads: main.ts imports start-databases-early.ts second, so each
 * worker thread loads PGlite and opens its database (about a second of its own core) while the main thread spends
 * about as long requiring the gateway's modules. openEmbeddedDatabases takes them over (pglite.ts keeps them by
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
  if (SHARED_SERVICES.some((s) => fs.existsSync(path.join(dataDir, s)))) return;
  prestartPglite(path.join(dataDir, 'billing'));
  prestartPglite(path.join(dataDir, SHARED_DIR));
}
