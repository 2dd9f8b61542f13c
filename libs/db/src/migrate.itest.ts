import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate } from './migrate';
import { sqlFileMigration } from './sql-file';
import { describeOnEngines, openTestDb, type TestDb } from './testing/temp-db';

describeOnEngines('migrate', (engine) => {
  let t: TestDb;
  let dir: string;
  beforeAll(async () => {
    t = await openTestDb(engine, 'migrate_test', []);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-migrate-'));
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const tables = async () =>
    (await t.db.query<{ name: string }>(`SELECT table_name AS name FROM information_schema.tables WHERE table_name LIKE 'mig_%' ORDER BY 1`)).map(
      (r) => r.name,
    );

  it('a recorded migration id is never applied again, even when its SQL now comes from a file', async () => {
    await migrate(t.db, 'migrate_test', [{ id: '001_first', sql: 'CREATE TABLE mig_a (id int);' }]);
    // The same id moved into a file (here with other SQL, to see whether it runs): an existing database skips it,
    // and the next id still applies.
    fs.writeFileSync(path.join(dir, '001_first.sql'), 'CREATE TABLE mig_changed (id int);');
    fs.writeFileSync(path.join(dir, '002_second.sql'), 'CREATE TABLE mig_b (id int);');
    const fromFiles = [sqlFileMigration('001_first', dir, ['001_first.sql']), sqlFileMigration('002_second', dir, ['002_second.sql'])];
    await migrate(t.db, 'migrate_test', fromFiles);
    await migrate(t.db, 'migrate_test', fromFiles);

    expect(await tables()).toEqual(['mig_a', 'mig_b']);
    expect((await t.db.query<{ id: string }>('SELECT id FROM schema_migrations ORDER BY id')).map((r) => r.id)).toEqual(['001_first', '002_second']);
  });
});
