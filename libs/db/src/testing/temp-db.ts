import crypto from 'node:crypto';
import { Client } from 'pg';
import { needServer } from '@gateway/testing';
import type { Db } from '../db';
import type { Migration } from '../migrate';
import { openServiceDb } from '../open';

/** The two engines a service's SQL runs on: PostgreSQL (fleet) and PGlite (embedded). */
export type Engine = 'postgres' | 'pglite';
export const ENGINES: readonly Engine[] = ['postgres', 'pglite'];

const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const postgres = needServer('PostgreSQL', PG, 5432);

/**
 * One describe per engine, `<title> on <engine>`. Under CI=true a missing PostgreSQL fails its suite; on a developer
 * machine that suite is listed as skipped with the reason, and the PGlite one still runs.
 */
export function describeOnEngines(title: string, fn: (engine: Engine) => void): void {
  for (const engine of ENGINES) {
    const name = `${title} on ${engine}`;
    if (engine === 'postgres') postgres.describe(name, () => fn(engine));
    else describe(name, () => fn(engine));
  }
}

export interface TestDb {
  db: Db;
  /** Closes the database and drops it, so suites leave nothing behind on the shared server. */
  close(): Promise<void>;
}

/**
 * Test suites only: a service's database with its migrations applied, either a fresh database of its own on the
 * real PostgreSQL (so suites running in parallel never see each other's rows) or an in-memory PGlite.
 * A missing PostgreSQL fails here, loudly (describeOnEngines decides beforehand whether a suite runs at all).
 */
export async function openTestDb(engine: Engine, service: string, migrations: Migration[], opts: { poolSize?: number } = {}): Promise<TestDb> {
  if (engine === 'pglite') {
    const db = await openServiceDb(service, migrations, {});
    return { db, close: () => db.close() };
  }
  const name = `gw_test_${crypto.randomBytes(5).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(PG);
  url.pathname = `/${name}`;
  const db = await openServiceDb(service, migrations, { databaseUrl: url.toString(), poolSize: opts.poolSize ?? 20 });
  return {
    db,
    async close() {
      await db.close();
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

async function admin(sql: string): Promise<void> {
  const c = new Client({ connectionString: PG });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}
