import path from 'node:path';
import type { Db } from './db';
import { ensureSchema, openPg } from './pg';
import { openPglite, type PgliteHost } from './pglite';
import { migrate, missingMigrations, type Migration } from './migrate';
import { serviceSeed } from './seeds';

/** A fleet service whose schema is behind what it needs, after waiting for the migration Job. */
export class SchemaBehindError extends Error {
  override name = 'SchemaBehindError';
}

/** How long a fleet service waits for its schema to be migrated before it refuses to start, by default. */
export const SCHEMA_WAIT_MS = 60_000;

export interface OpenServiceDbOptions {
  databaseUrl?: string;
  dataDir?: string;
  poolSize?: number;
  pglite?: PgliteHost;
  /**
   * On PostgreSQL: `apply` the migrations (the migrate command, the embedded gateway, `pnpm fleet`, tests), or only
   * `check` that the schema is at or above what this binary needs (a fleet service: the migrate Job applies them,
   * so an old pod restarting during a rollout never touches the schema). Default `apply`. PGlite always applies:
   * it is the process's own.
   */
  schema?: 'apply' | 'check';
  /** `check`: how long to wait for a migration under way before refusing; default SCHEMA_WAIT_MS. */
  waitMs?: number;
  /** `check`: told once what is missing while it waits. */
  onWait?: (missing: string[]) => void;
}

/**
 * A service's own database: its schema on PostgreSQL when DATABASE_URL is set (fleet), else its schema on a PGlite
 * it shares with other services (`pglite`), else a PGlite of its own under the data directory, or in memory when
 * no directory is given.
 */
export async function openServiceDb(service: string, migrations: Migration[], opts: OpenServiceDbOptions): Promise<Db> {
  let db: Db;
  if (opts.databaseUrl) {
    if (opts.schema === 'check') {
      db = openPg(opts.databaseUrl, service, { max: opts.poolSize });
      await awaitSchema(db, service, migrations, opts).catch(async (e) => {
        await db.close();
        throw e;
      });
      return db;
    }
    await ensureSchema(opts.databaseUrl, service);
    db = openPg(opts.databaseUrl, service, { max: opts.poolSize });
  } else if (opts.pglite) {
    db = await opts.pglite.schema(service);
  } else {
    db = await openPglite(opts.dataDir ? path.join(opts.dataDir, service) : undefined, serviceSeed(service, migrations));
  }
  await migrate(db, service, migrations);
  return db;
}

/**
 * Waits until the schema holds every migration this binary needs, polling: a migrate Job that runs beside the
 * rollout (kubectl apply of k8s/) finishes meanwhile. Refuses after `waitMs`, naming what is missing and the command
 * that applies it, rather than loop on a startup probe.
 */
async function awaitSchema(db: Db, service: string, migrations: Migration[], opts: OpenServiceDbOptions): Promise<void> {
  const deadline = Date.now() + (opts.waitMs ?? SCHEMA_WAIT_MS);
  let told = false;
  for (;;) {
    const missing = await missingMigrations(db, migrations);
    if (missing.length === 0) return;
    if (Date.now() >= deadline)
      throw new SchemaBehindError(
        `the ${service} schema lacks ${missing.join(', ')}: run the migrations first ` +
          `(node dist/migrate.cjs ${service} (built by pnpm build), the chart's migrate Job, or k8s/migrate-job.yaml; docs/deploy.md)`,
      );
    if (!told) opts.onWait?.(missing);
    told = true;
    await new Promise((r) => setTimeout(r, 1_000));
  }
}

/**
 * A fleet service's database, as its main opens it: on PostgreSQL the schema is only checked (the migrate command
 * applies it, docs/deploy.md "Migrations"), waiting for a migration under way and saying so; PGlite as always.
 */
export function openFleetServiceDb(
  service: string,
  migrations: Migration[],
  opts: { databaseUrl?: string; dataDir?: string; logger: { warn(obj: object, msg: string): void } },
): Promise<Db> {
  return openServiceDb(service, migrations, {
    databaseUrl: opts.databaseUrl,
    dataDir: opts.dataDir,
    schema: 'check',
    onWait: (missing) => opts.logger.warn({ missing }, `the ${service} schema lacks what this binary needs: waiting for the migrations`),
  });
}
