import path from 'node:path';
import { sqlFileMigration, type Migration } from '@gateway/db';

const SQL = path.join(__dirname, 'ledger', 'sql');

/**
 * The ledger's schema and its functions (place_hold, close_hold, expire_holds), in ledger/sql/. The ids are what
 * `schema_migrations` records on every existing database: never rename, reorder or change an applied migration's
 * SQL (a database that has it would not see the change); add a new migration instead.
 */
export const migrations: Migration[] = [
  sqlFileMigration('001_ledger', SQL, ['001_ledger.sql', '001_place_hold.sql', '001_close_hold.sql', '001_expire_holds.sql']),
];
