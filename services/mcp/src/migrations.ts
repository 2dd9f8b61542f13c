import path from 'node:path';
import { type Migration, sqlFileMigration } from '@gateway/db';

/** The MCP service's tables, in sql/. Versioned: never change an applied one; add the next. */
export const migrations: Migration[] = [
  sqlFileMigration('001_sessions', path.join(__dirname, 'sql'), ['001_sessions.sql']),
  sqlFileMigration('002_session_bounds', path.join(__dirname, 'sql'), ['002_session_bounds.sql']),
];
