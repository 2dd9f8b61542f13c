export type { Db, Queryable, Row } from './db';
export { ensureSchema, openPg } from './pg';
export { openPglite, openPgliteHost, prestartPglite, type PgliteHost, type PgliteSeed } from './pglite';
export { serviceSeed, sharedSeed } from './seeds';
export { migrate, missingMigrations, type Migration, type MigrationReport } from './migrate';
export { sqlFileMigration } from './sql-file';
export { openFleetServiceDb, openServiceDb, SchemaBehindError, SCHEMA_WAIT_MS, type OpenServiceDbOptions } from './open';
