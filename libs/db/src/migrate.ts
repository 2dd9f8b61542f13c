import type { Db } from './db';

export interface Migration {
  id: string;
  sql: string;
  /**
   * Runs at every start, after the versioned ones, instead of once: for definitions that replace themselves
   * (`CREATE OR REPLACE FUNCTION`), so a changed function reaches databases that applied the old one.
   */
  repeatable?: boolean;
}

/**
 * Applies the service's migrations in order: versioned ones once each, repeatable ones every time. On PostgreSQL
 * an advisory lock keeps two replicas starting together from applying the same migration twice.
 */
export async function migrate(db: Db, service: string, migrations: Migration[]): Promise<void> {
  await db.transaction(async (tx) => {
    if (db.kind === 'pg') await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`migrate:${service}`]);
    await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const done = new Set((await tx.query<{ id: string }>('SELECT id FROM schema_migrations')).map((r) => r.id));
    for (const m of migrations.filter((x) => !x.repeatable)) {
      if (done.has(m.id)) continue;
      await tx.exec(m.sql);
      await tx.query('INSERT INTO schema_migrations (id) VALUES ($1)', [m.id]);
    }
    for (const m of migrations.filter((x) => x.repeatable)) await tx.exec(m.sql);
  });
}
