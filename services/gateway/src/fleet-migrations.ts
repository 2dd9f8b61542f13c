import { migrations as billingMigrations } from '@gateway/billing';
import { migrations as catalogueMigrations } from '@gateway/catalogue';
import { type Migration, type MigrationReport, ensureSchema, migrate, openPg } from '@gateway/db';
import { migrations as jobsMigrations } from '@gateway/jobs';
import { migrations as mcpMigrations } from '@gateway/mcp';
import { migrations as mediaMigrations } from '@gateway/media';

/** Every service that keeps tables, with its migrations; each owns one schema of that name. */
export const FLEET_MIGRATIONS: Record<string, Migration[]> = {
  billing: billingMigrations,
  media: mediaMigrations,
  jobs: jobsMigrations,
  catalogue: catalogueMigrations,
  mcp: mcpMigrations,
};

/**
 * Applies one service's migrations to its schema on PostgreSQL, creating the schema only when it is missing: what
 * the migrate command runs, with the migration role (docs/deploy.md, "Migrations and database privileges").
 */
export async function migrateServiceSchema(databaseUrl: string, service: string): Promise<MigrationReport> {
  const migrations = FLEET_MIGRATIONS[service];
  if (!migrations) throw new Error(`no migrations for "${service}": one of ${Object.keys(FLEET_MIGRATIONS).join(', ')}`);
  await ensureSchema(databaseUrl, service);
  const db = openPg(databaseUrl, service, { max: 1 });
  try {
    return await migrate(db, service, migrations);
  } finally {
    await db.close();
  }
}
