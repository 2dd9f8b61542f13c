import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite as PGliteBefore } from '@electric-sql/pglite-0.3';
import { openPglite } from './pglite';

// A PGlite of each version, started from nothing on a worker thread: seconds each on a busy CI host.
jest.setTimeout(120_000);

/**
 * The embedded gateway's data directories were made by PGlite 0.3 (PostgreSQL 17) until 2026-11-28; the gateway
 * now runs 0.4 (the same PostgreSQL major, so the same files) with a command line of its own. An operator who
 * upgrades keeps every row, and the database they get is the durable, smaller one.
 */
describe('a data directory made by PGlite 0.3, opened by the gateway', () => {
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-pglite-upgrade-'));
    const before = await PGliteBefore.create({ dataDir: dir });
    await before.exec(`CREATE TABLE accounts (id text PRIMARY KEY, balance numeric(20, 9) NOT NULL);
      INSERT INTO accounts VALUES ('acct_a', 10.000000001), ('acct_b', 0.5)`);
    await before.close();
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps its rows, takes writes, and keeps them across a restart', async () => {
    const db = await openPglite(dir);
    expect(await db.query('SELECT id, balance::text AS balance FROM accounts ORDER BY id')).toEqual([
      { id: 'acct_a', balance: '10.000000001' },
      { id: 'acct_b', balance: '0.500000000' },
    ]);
    await db.query("UPDATE accounts SET balance = balance - 0.000000001 WHERE id = 'acct_a'");
    await db.close();
    const again = await openPglite(dir);
    expect(await again.query("SELECT balance::text AS balance FROM accounts WHERE id = 'acct_a'")).toEqual([{ balance: '10.000000000' }]);
    await again.close();
  });

  it('runs with fsync on and 4 MB of shared buffers, whatever PGlite would start with', async () => {
    const db = await openPglite(dir);
    const settings = await db.query<{ name: string; setting: string }>(
      "SELECT name, current_setting(name) AS setting FROM unnest(ARRAY['fsync', 'shared_buffers', 'wal_sync_method']) AS name ORDER BY name",
    );
    await db.close();
    expect(settings).toEqual([
      { name: 'fsync', setting: 'on' },
      { name: 'shared_buffers', setting: '4MB' },
      { name: 'wal_sync_method', setting: 'fdatasync' },
    ]);
  });
});
