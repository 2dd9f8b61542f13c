import path from 'node:path';
import type { Db } from './db';
import { ensureSchema, openPg } from './pg';
import { openPglite, type PgliteHost } from './pglite';
import { migrate, type Migration } from './migrate';

/**
 * A service's own database: its schema on PostgreSQL when DATABASE_URL is set (fleet), else its schema on a PGlite
 * it shares with other services (`pglite`), else a PGlite of its own under the data directory, or in memory when
 * no directory is given. Migrations run here.
 */
export async function openServiceDb(
  service: string,
  migrations: Migration[],
  opts: { databaseUrl?: string; dataDir?: string; poolSize?: number; pglite?: PgliteHost },
): Promise<Db> {
  let db: Db;
  if (opts.databaseUrl) {
    await ensureSchema(opts.databaseUrl, service);
    db = openPg(opts.databaseUrl, service, { max: opts.poolSize });
  } else if (opts.pglite) {
    db = await opts.pglite.schema(service);
  } else {
    db = await openPglite(opts.dataDir ? path.join(opts.dataDir, service) : undefined);
  }
  await migrate(db, service, migrations);
  return db;
}
