import path from 'node:path';
import { sqlFileMigration, type Migration } from '@gateway/db';

const SQL = path.join(__dirname, 'ledger', 'sql');

/**
 * The ledger's tables, then its functions (place_hold and place_holds, close_hold and close_holds, checkpoint_hold, expire_holds;
 * ledger_write for the embedded in-memory ledger), in ledger/sql/. The tables are
 * versioned: the ids are what `schema_migrations` records on every existing database, so never rename, reorder
 * or change an applied one; add a new one. The functions are one repeatable migration with a version: the migrate
 * command replaces them (CREATE OR REPLACE) when the database holds an older version, never a newer one, so a rule
 * changed in their files reaches every database and an older binary never puts its rules back. Raise
 * LEDGER_FUNCTIONS_VERSION with every change of those files (migrations.test.ts pins each version's checksum).
 * (Databases from before this split recorded 001_ledger with the functions inside it; replacing them is the same
 * end state.)
 */
export const LEDGER_FUNCTIONS_VERSION = 3;

export const migrations: Migration[] = [
  sqlFileMigration('001_ledger', SQL, ['001_ledger.sql']),
  sqlFileMigration('002_usage_estimated', SQL, ['002_usage_estimated.sql']),
  sqlFileMigration('003_ledger_journal', SQL, ['003_ledger_journal.sql']),
  sqlFileMigration('004_hold_checkpoints', SQL, ['004_hold_checkpoints.sql']),
  sqlFileMigration('005_ledger_dead_letters', SQL, ['005_ledger_dead_letters.sql']),
  sqlFileMigration('006_idempotent_answers', SQL, ['006_idempotent_answers.sql']),
  sqlFileMigration('007_usage_provider', SQL, ['007_usage_provider.sql']),
  sqlFileMigration('008_token_details', SQL, ['008_token_details.sql']),
  sqlFileMigration('009_hot_tables_without_foreign_keys', SQL, ['009_hot_tables_without_foreign_keys.sql']),
  sqlFileMigration(
    'ledger_functions',
    SQL,
    ['place_hold.sql', 'place_holds.sql', 'close_hold.sql', 'close_holds.sql', 'checkpoint_hold.sql', 'expire_holds.sql', 'ledger_write.sql'],
    {
      repeatable: true,
      version: LEDGER_FUNCTIONS_VERSION,
    },
  ),
];
