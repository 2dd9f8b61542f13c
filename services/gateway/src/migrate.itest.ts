import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { Client } from 'pg';
import { type Migration, SchemaBehindError, migrate, missingMigrations, openPg, openServiceDb } from '@gateway/db';
import { needServer } from '@gateway/testing';
import { sourceCommand } from '@gateway/topology';
import { FLEET_MIGRATIONS } from './fleet-migrations';

/**
 * Issue 34, defect 6, on the real PostgreSQL: migrations run by the migrate command with a migration role, never
 * at a service's start; a service only checks its schema, with a runtime role that cannot change it; function
 * definitions never go back to an older binary's.
 */
const PG = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ROOT = path.resolve(__dirname, '../../..');
const MIGRATE = sourceCommand('services/gateway/src/migrate.ts').slice(1);

async function superuser<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const withUser = (url: string, user: string) => {
  const u = new URL(url);
  u.username = user;
  u.password = '';
  return u.toString();
};

needServer('PostgreSQL', PG, 5432).describe('migrations on PostgreSQL: the migrate command, the start check, the roles', () => {
  const suffix = crypto.randomBytes(4).toString('hex');
  const database = `gw_migrate_${suffix}`;
  const migrator = `gw_migrator_${suffix}`;
  const runtime = `gw_runtime_${suffix}`;
  let url: string;

  beforeAll(async () => {
    await superuser(PG, (c) => c.query(`CREATE DATABASE ${database}`));
    const u = new URL(PG);
    u.pathname = `/${database}`;
    url = u.toString();
    // The migration role owns the service's schema, made for it by an administrator; it has no CREATE on the
    // database (PostgreSQL grants PUBLIC none), so the migrate command must not ask to create the schema again.
    // The runtime role gets the documented grants (docs/deploy.md, "Migrations and database privileges").
    await superuser(url, async (c) => {
      await c.query(`CREATE ROLE ${migrator} LOGIN`);
      await c.query(`CREATE ROLE ${runtime} LOGIN`);
      await c.query(`REVOKE CREATE ON DATABASE ${database} FROM PUBLIC`);
      await c.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
      await c.query(`CREATE SCHEMA billing AUTHORIZATION ${migrator}`);
      await c.query(`GRANT CONNECT ON DATABASE ${database} TO ${runtime}`);
      await c.query(`GRANT USAGE ON SCHEMA billing TO ${runtime}`);
      await c.query(`ALTER DEFAULT PRIVILEGES FOR ROLE ${migrator} IN SCHEMA billing GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${runtime}`);
      await c.query(`ALTER DEFAULT PRIVILEGES FOR ROLE ${migrator} IN SCHEMA billing GRANT USAGE, SELECT ON SEQUENCES TO ${runtime}`);
    });
  }, 30_000);
  afterAll(async () => {
    await superuser(PG, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      for (const role of [migrator, runtime]) await c.query(`DROP ROLE IF EXISTS ${role}`);
    });
  });

  // What this binary's billing migrations are: the last versioned one, and the ledger functions' version.
  const lastBilling = FLEET_MIGRATIONS.billing.filter((m) => !m.repeatable).at(-1)!.id;
  const functionsVersion = FLEET_MIGRATIONS.billing.find((m) => m.repeatable)!.version;

  it("a service's start check refuses a schema that lacks its migrations, naming them and the command that applies them", async () => {
    const opening = openServiceDb('billing', FLEET_MIGRATIONS.billing, { databaseUrl: withUser(url, runtime), schema: 'check', waitMs: 0 });
    await expect(opening).rejects.toThrow(SchemaBehindError);
    await expect(opening).rejects.toThrow(
      new RegExp(`the billing schema lacks 001_ledger, .*${lastBilling}, ledger_functions v${functionsVersion}.*migrate\\.cjs billing`),
    );
  });

  it('the migrate command applies billing with the migration role (no CREATE on the database), and a second run changes nothing', () => {
    const run = () =>
      spawnSync(process.execPath, [...MIGRATE, 'billing'], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: withUser(url, migrator) },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const first = run();
    expect({ code: first.status, err: first.stderr }).toEqual({ code: 0, err: '' });
    expect(first.stdout).toMatch(new RegExp(`^billing: applied 001_ledger, .*${lastBilling}, ledger_functions v${functionsVersion}\n$`));
    const again = run();
    expect({ code: again.status, out: again.stdout }).toEqual({ code: 0, out: `billing: up to date; kept ledger_functions v${functionsVersion}\n` });
  });

  it('billing starts with the runtime role, which can use the ledger but not change the schema', async () => {
    const db = await openServiceDb('billing', FLEET_MIGRATIONS.billing, { databaseUrl: withUser(url, runtime), schema: 'check', waitMs: 0 });
    try {
      // The ledger's functions run with the caller's rights: the sweep reads and locks holds.
      await db.query('SELECT sweep_holds(10)');
      await db.query('SELECT count(*) FROM accounts');
      await expect(db.query('CREATE TABLE billing.not_allowed (x int)')).rejects.toThrow(/permission denied/);
      await expect(db.query(`CREATE OR REPLACE FUNCTION place_hold() RETURNS int LANGUAGE sql AS 'SELECT 1'`)).rejects.toThrow(/permission denied/);
    } finally {
      await db.close();
    }
  });

  it('an older binary neither replaces newer functions nor counts them as missing; a newer one finds the older ones missing', async () => {
    const fn = (n: number) => `CREATE OR REPLACE FUNCTION answer() RETURNS int LANGUAGE sql AS 'SELECT ${n}'`;
    const table: Migration = { id: '001_t', sql: 'CREATE TABLE t (x int)' };
    const v1: Migration[] = [table, { id: 'fns', sql: fn(1), repeatable: true, version: 1 }];
    const v2: Migration[] = [table, { id: 'fns', sql: fn(2), repeatable: true, version: 2 }];
    await superuser(url, (c) => c.query('CREATE SCHEMA guard'));
    const db = openPg(url, 'guard');
    const answer = async () => (await db.query<{ a: number }>('SELECT answer() AS a'))[0].a;
    try {
      expect(await migrate(db, 'guard', v1)).toEqual({ applied: ['001_t', 'fns v1'], kept: [] });
      expect(await missingMigrations(db, v2)).toEqual(['fns v2 (the database has v1)']);
      expect(await migrate(db, 'guard', v2)).toEqual({ applied: ['fns v2'], kept: [] });
      expect(await answer()).toBe(2);
      // The old binary (a rollback, an old pod): nothing to do, nothing missing, the newer function stays.
      expect(await migrate(db, 'guard', v1)).toEqual({ applied: [], kept: ["fns v2 (newer than this binary's v1)"] });
      expect(await missingMigrations(db, v1)).toEqual([]);
      expect(await answer()).toBe(2);
      // Changed SQL under a released version is refused, and changes nothing.
      await expect(migrate(db, 'guard', [table, { id: 'fns', sql: fn(3), repeatable: true, version: 2 }])).rejects.toThrow(
        'fns: version 2 is installed with other SQL; raise its version',
      );
      expect(await answer()).toBe(2);
    } finally {
      await db.close();
    }
  });
});
