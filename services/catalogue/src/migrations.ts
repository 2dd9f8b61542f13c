import path from 'node:path';
import { type Migration, sqlFileMigration } from '@gateway/db';

const SQL = path.join(__dirname, 'sql');

/** The catalogue's tables, in sql/. Versioned: never change an applied one; add the next. */
export const migrations: Migration[] = [
  sqlFileMigration('001_stats_status', SQL, ['001_stats_status.sql']),
  sqlFileMigration('002_model_first_seen', SQL, ['002_model_first_seen.sql']),
];
