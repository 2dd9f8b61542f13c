export type { Db, Queryable, Row } from './db';
export { openPg } from './pg';
export { openPglite, openPgliteHost, type PgliteHost } from './pglite';
export { migrate, type Migration } from './migrate';
export { sqlFileMigration } from './sql-file';
export { openServiceDb } from './open';
