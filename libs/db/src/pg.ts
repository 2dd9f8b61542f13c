import { Pool, types } from 'pg';
import type { Db, Queryable, Row } from './db';
import { SCHEMA_NAME } from './schema-name';

// int8 and numeric arrive as strings from pg; the ledger converts them with BigInt, never Number.
types.setTypeParser(20, (v) => v);

export function openPg(url: string, schema: string, opts: { max?: number } = {}): Db {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`bad schema name ${schema}`);
  const pool = new Pool({ connectionString: url, max: opts.max ?? 10, options: `-c search_path=${schema},public` });
  // A dropped idle connection must not crash the process; the next query gets a fresh one.
  pool.on('error', () => undefined);
  const db: Db = {
    kind: 'pg',
    async query<T extends Row>(sql: string, params?: unknown[]) {
      return (await pool.query(sql, params as unknown[])).rows as T[];
    },
    async exec(sql) {
      await pool.query(sql);
    },
    async transaction(fn) {
      const client = await pool.connect();
      // A checked-out client has no listener of the pool's: a connection dropped between two statements of the
      // transaction (a PostgreSQL restart) would be an uncaught 'error' and kill the process. Keep it, and destroy the
      // client on release so the pool never hands it out again.
      let broken: Error | undefined;
      const onError = (err: Error) => {
        broken = err;
      };
      client.on('error', onError);
      try {
        await client.query('BEGIN');
        const tx: Queryable = {
          query: async <T extends Row>(s: string, p?: unknown[]) => (await client.query(s, p as unknown[])).rows as T[],
          exec: async (s: string) => void (await client.query(s)),
        };
        const out = await fn(tx);
        await client.query('COMMIT');
        return out;
      } catch (e) {
        if (!broken) await client.query('ROLLBACK').catch(onError);
        throw e;
      } finally {
        client.removeListener('error', onError);
        client.release(broken ?? false);
      }
    },
    async ping() {
      await pool.query('SELECT 1');
    },
    async close() {
      await pool.end();
    },
  };
  return db;
}

/**
 * Creates the service's schema before the pool's search_path can point at it. Only when it is missing: CREATE
 * SCHEMA IF NOT EXISTS checks CREATE on the database first, which a role that owns an existing schema need not have.
 */
export async function ensureSchema(url: string, schema: string): Promise<void> {
  if (!SCHEMA_NAME.test(schema)) throw new Error(`bad schema name ${schema}`);
  const pool = new Pool({ connectionString: url, max: 1 });
  try {
    const { rowCount } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (rowCount) return;
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`).catch((e: { code?: string }) => {
      if (e.code !== '23505' && e.code !== '42P06') throw e; // two services racing to create it
    });
  } finally {
    await pool.end();
  }
}
