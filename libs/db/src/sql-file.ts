import fs from 'node:fs';
import path from 'node:path';
import type { Migration } from './migrate';

/**
 * A migration whose SQL lives in .sql files, so the schema reads as SQL (with SQL comments), not as TS strings.
 * Several files make one migration, joined in the order given and applied in its one transaction: the id is what
 * `schema_migrations` records, so splitting an applied migration into files never makes it run again.
 * Read now, at start-up: a file missing from a deployment stops the service before it touches the database.
 */
export function sqlFileMigration(id: string, dir: string, files: string[], opts: { repeatable?: boolean; version?: number } = {}): Migration {
  if (files.length === 0) throw new Error(`migration ${id}: no SQL files given`);
  const parts = files.map((file) => {
    const full = path.join(dir, file);
    try {
      return fs.readFileSync(full, 'utf8');
    } catch (e) {
      throw new Error(`migration ${id}: cannot read ${full}: ${(e as Error).message}`, { cause: e });
    }
  });
  return { id, sql: parts.join('\n'), ...(opts.repeatable ? { repeatable: true, version: opts.version } : {}) };
}
