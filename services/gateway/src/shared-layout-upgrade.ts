import fs from 'node:fs';
import path from 'node:path';
import { openPgliteHost, openServiceDb, type Db, type Migration } from '@gateway/db';
import type { Logger } from '@gateway/service-kit';

/** A service whose tables a data directory once kept in a PGlite of its own, `<data dir>/<name>`. */
export interface SharedService {
  name: string;
  migrations: Migration[];
}

/** Where the per-service databases go once copied: kept, not deleted, until the operator removes them. */
export const BACKUP_DIR = 'per-service-databases.bak';
const ROWS_PER_COPY = 2_000;

/**
 * Moves a data directory written with a PGlite per service onto the shared one: each service's database is brought
 * to its current migrations, then every table is copied row for row into that service's schema of a new shared
 * PGlite (`<shared>.partial`), checked by count, and only then is the new one renamed into place and the old
 * directories moved under BACKUP_DIR. Rows travel as PostgreSQL's own JSON text (row_to_json, then
 * json_populate_recordset), never as JavaScript values, so numerics, 64-bit integers, timestamps and bytes come
 * across exactly. A start that dies half-way leaves the old directories as they were and starts the copy again.
 */
export async function upgradeToSharedLayout(dataDir: string, sharedDir: string, services: readonly SharedService[], logger: Logger): Promise<void> {
  const shared = path.join(dataDir, sharedDir);
  const legacy = services.filter((s) => fs.existsSync(path.join(dataDir, s.name)));
  if (legacy.length === 0) return;
  // The shared database exists only once a copy completed: old directories still beside it were not yet moved.
  if (!fs.existsSync(shared)) {
    const partial = `${shared}.partial`;
    fs.rmSync(partial, { recursive: true, force: true });
    logger.warn({ dataDir, services: legacy.map((s) => s.name) }, 'moving the per-service databases into the shared one');
    const host = await openPgliteHost(partial);
    // All open at once: the host's worker ends when its last schema closes.
    const targets = await Promise.all(legacy.map((s) => openServiceDb(s.name, s.migrations, { pglite: host })));
    const copied: Record<string, number> = {};
    try {
      for (const [i, service] of legacy.entries()) {
        const from = await openServiceDb(service.name, service.migrations, { dataDir });
        try {
          copied[service.name] = await copyTables(from, targets[i], service.name);
        } finally {
          await from.close();
        }
      }
    } finally {
      for (const t of targets) await t.close();
    }
    fs.renameSync(partial, shared);
    logger.warn({ dataDir, rows: copied }, 'the per-service databases are in the shared one now');
  }
  const backup = path.join(dataDir, BACKUP_DIR);
  fs.mkdirSync(backup, { recursive: true });
  for (const s of legacy) fs.renameSync(path.join(dataDir, s.name), path.join(backup, s.name));
  logger.warn({ backup }, 'the per-service databases were kept; delete that directory once the gateway runs as it should');
}

/** Copies every table of `from`'s default schema into the same-named tables of `to`, and its sequences' positions. */
async function copyTables(from: Db, to: Db, schema: string): Promise<number> {
  const tables = await from.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations' ORDER BY 1`,
  );
  let total = 0;
  await to.transaction(async (tx) => {
    // Rows arrive table by table, so a row may come before the one its foreign key names; the checks stand again
    // for every write after this transaction.
    await tx.query(`SET LOCAL session_replication_role = replica`);
    for (const { name } of tables) {
      const table = `"${schema}"."${name}"`;
      await tx.query(`DELETE FROM ${table}`);
      for (let offset = 0; ; offset += ROWS_PER_COPY) {
        const [{ rows }] = await from.query<{ rows: string | null }>(
          `SELECT json_agg(row_to_json(copied_row))::text AS rows FROM (SELECT * FROM "${name}" ORDER BY ctid LIMIT ${ROWS_PER_COPY} OFFSET ${offset}) copied_row`,
        );
        if (rows === null) break;
        await tx.query(`INSERT INTO ${table} SELECT * FROM json_populate_recordset(NULL::${table}, $1::json)`, [rows]);
      }
      const [source] = await from.query<{ n: string }>(`SELECT count(*)::text AS n FROM "${name}"`);
      const [copied] = await tx.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`);
      if (source.n !== copied.n) throw new Error(`copying ${schema}.${name}: ${source.n} rows in the old database, ${copied.n} copied`);
      total += Number(source.n);
    }
    const sequences = await from.query<{ name: string; last: string | null }>(
      `SELECT sequencename AS name, last_value::text AS last FROM pg_sequences WHERE schemaname = 'public'`,
    );
    for (const s of sequences) if (s.last !== null) await tx.query(`SELECT setval($1::regclass, $2::bigint)`, [`"${schema}"."${s.name}"`, s.last]);
  });
  return total;
}
