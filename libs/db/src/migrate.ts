import crypto from 'node:crypto';
import type { Db, Queryable } from './db';

export interface Migration {
  id: string;
  sql: string;
  /**
   * Applied again when its version rises, instead of once: for definitions that replace themselves
   * (`CREATE OR REPLACE FUNCTION`), so a changed function reaches databases that applied the old one.
   */
  repeatable?: boolean;
  /**
   * A repeatable's version: raise it with every change of its SQL (a test holds each to its checksum). A database
   * keeps the highest version any binary installed, so an older binary (a rollback, an old pod restarting during a
   * rollout) never puts its older functions back for everyone.
   */
  version?: number;
}

/** What a migration run did, for the migrate command's output. */
export interface MigrationReport {
  applied: string[];
  /** Repeatables left as they were: already at this version, or at a newer one (named with it). */
  kept: string[];
}

const checksum = (sql: string) => crypto.createHash('sha256').update(sql).digest('hex');

function versionOf(m: Migration): number {
  if (!m.repeatable) return 0;
  if (!Number.isInteger(m.version) || (m.version ?? 0) < 1) throw new Error(`migration ${m.id}: a repeatable migration needs a version (1, 2, ...)`);
  return m.version as number;
}

async function createLedgerTables(tx: Queryable): Promise<void> {
  await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
  await tx.query(
    'CREATE TABLE IF NOT EXISTS schema_repeatables (id text PRIMARY KEY, version integer NOT NULL, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
  );
}

/**
 * Applies the service's migrations in order: versioned ones once each, then each repeatable one when the database
 * holds an older version of it (or none). One at the same version with other SQL is refused: someone changed
 * the SQL without raising the version. On PostgreSQL an advisory lock keeps two runs from applying the same
 * migration twice.
 */
export async function migrate(db: Db, service: string, migrations: Migration[]): Promise<MigrationReport> {
  const report: MigrationReport = { applied: [], kept: [] };
  await db.transaction(async (tx) => {
    if (db.kind === 'pg') await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`migrate:${service}`]);
    await createLedgerTables(tx);
    const done = new Set((await tx.query<{ id: string }>('SELECT id FROM schema_migrations')).map((r) => r.id));
    for (const m of migrations.filter((x) => !x.repeatable)) {
      if (done.has(m.id)) continue;
      await tx.exec(m.sql);
      await tx.query('INSERT INTO schema_migrations (id) VALUES ($1)', [m.id]);
      report.applied.push(m.id);
    }
    const installed = new Map(
      (await tx.query<{ id: string; version: number; checksum: string }>('SELECT id, version, checksum FROM schema_repeatables')).map((r) => [
        r.id,
        r,
      ]),
    );
    for (const m of migrations.filter((x) => x.repeatable)) {
      const version = versionOf(m);
      const sum = checksum(m.sql);
      const there = installed.get(m.id);
      if (there && there.version > version) {
        report.kept.push(`${m.id} v${there.version} (newer than this binary's v${version})`);
        continue;
      }
      if (there && there.version === version) {
        if (there.checksum !== sum)
          throw new Error(`migration ${m.id}: version ${version} is installed with other SQL; raise its version when its SQL changes`);
        report.kept.push(`${m.id} v${version}`);
        continue;
      }
      await tx.exec(m.sql);
      await tx.query(
        `INSERT INTO schema_repeatables (id, version, checksum) VALUES ($1, $2, $3)
           ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version, checksum = EXCLUDED.checksum, applied_at = now()`,
        [m.id, version, sum],
      );
      report.applied.push(`${m.id} v${version}`);
    }
  });
  return report;
}

/**
 * What this binary needs that the database lacks: versioned migrations not applied, repeatables below this
 * binary's version. Empty when the schema is at or above what the binary needs. Reads only (no lock, no DDL), so
 * a service's runtime role can run it.
 */
export async function missingMigrations(db: Queryable, migrations: Migration[]): Promise<string[]> {
  const exists = async (table: string) => (await db.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table]))[0]?.t !== null;
  const done = (await exists('schema_migrations'))
    ? new Set((await db.query<{ id: string }>('SELECT id FROM schema_migrations')).map((r) => r.id))
    : new Set<string>();
  const installed = (await exists('schema_repeatables'))
    ? new Map((await db.query<{ id: string; version: number }>('SELECT id, version FROM schema_repeatables')).map((r) => [r.id, r.version]))
    : new Map<string, number>();
  return migrations.flatMap((m) => {
    if (!m.repeatable) return done.has(m.id) ? [] : [m.id];
    const version = versionOf(m);
    const there = installed.get(m.id) ?? 0;
    return there >= version ? [] : [`${m.id} v${version}${there ? ` (the database has v${there})` : ''}`];
  });
}
