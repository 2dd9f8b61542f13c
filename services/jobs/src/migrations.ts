import path from 'node:path';
import { type Migration, sqlFileMigration } from '@gateway/db';

/** The jobs service's tables, in sql/. Versioned: never change an applied one; add the next. */
export const migrations: Migration[] = [
  sqlFileMigration('001_jobs', path.join(__dirname, 'sql'), ['001_jobs.sql']),
  sqlFileMigration('002_request_fingerprint', path.join(__dirname, 'sql'), ['002_request_fingerprint.sql']),
];
