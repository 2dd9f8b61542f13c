import fs from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import type { Db, Queryable, Row } from './db';

/** Embedded PostgreSQL. `dir` undefined keeps it in memory (tests). */
export async function openPglite(dir?: string): Promise<Db> {
  if (dir) fs.mkdirSync(dir, { recursive: true });
  const pg = new PGlite(dir);
  await pg.waitReady;
  const wrap = (q: { query: PGlite['query']; exec: PGlite['exec'] }): Queryable => ({
    async query<T extends Row>(sql: string, params?: unknown[]) {
      return (await q.query<T>(sql, params as unknown[])).rows;
    },
    async exec(sql: string) {
      await q.exec(sql);
    },
  });
  const base = wrap(pg);
  return {
    kind: 'pglite',
    query: base.query,
    exec: base.exec,
    transaction: (fn) => pg.transaction((tx) => fn(wrap(tx))),
    async ping() {
      await pg.query('SELECT 1');
    },
    async close() {
      await pg.close();
    },
  };
}
