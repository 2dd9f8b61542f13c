import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate } from './migrate';
import { openServiceDb } from './open';
import { openPgliteHost, pristineCluster } from './pglite';
import { sharedSeed } from './seeds';

// A cache of this file's own, so its seeds never meet the installation's. The pristine cluster is copied in from the
// installation's cache when it is there (initdb otherwise, several seconds).
const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-pglite-cache-'));
const installed = path.join(
  path.dirname(require.resolve('@electric-sql/pglite')).split(`${path.sep}node_modules${path.sep}`)[0],
  'node_modules',
  '.cache',
  'gateway-pglite',
);
process.env.GATEWAY_PGLITE_CACHE = cache;

jest.setTimeout(120_000);

/** A migration whose table remembers when it ran: two directories copied from one seed hold the same instant. */
const v1 = [{ id: '001', sql: 'CREATE TABLE made (at text NOT NULL DEFAULT clock_timestamp()::text); INSERT INTO made DEFAULT VALUES' }];
const v2 = [...v1, { id: '002', sql: 'CREATE TABLE later (id int PRIMARY KEY)' }];

const seedsIn = () =>
  fs
    .readdirSync(cache)
    .filter((n) => n.includes('-seed-'))
    .sort();

describe('new data directories copied from a cluster with their migrations applied (a seed)', () => {
  let dir: string;
  beforeAll(() => {
    for (const name of fs.existsSync(installed) ? fs.readdirSync(installed) : []) {
      if (/^pglite-[\d.]+-\d+$/.test(name)) fs.cpSync(path.join(installed, name), path.join(cache, name), { recursive: true });
    }
  });
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-pglite-seed-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterAll(() => fs.rmSync(cache, { recursive: true, force: true }));

  const openAt = async (sub: string, migrations = v1) => openServiceDb('seeded', migrations, { dataDir: path.join(dir, sub) });

  it("two new directories hold the seed's rows, written once, and their first start applies nothing", async () => {
    const a = await openAt('a');
    const b = await openAt('b');
    const [[ra], [rb]] = await Promise.all([a.query('SELECT at FROM made'), b.query('SELECT at FROM made')]);
    expect(rb).toEqual(ra);
    expect(await migrate(b, 'seeded', v1)).toEqual({ applied: [], kept: [] });
    expect(seedsIn()).toHaveLength(1);
    // Each copy is marked synced: durable as a cluster the worker synced itself (pglite-worker.js, openDurable).
    for (const d of ['a', 'b']) expect(fs.existsSync(path.join(dir, d, 'seeded', 'gateway-synced'))).toBe(true);
    await Promise.all([a.close(), b.close()]);
  });

  it('a directory opened again keeps its own rows, not the seed’s', async () => {
    const a = await openAt('a');
    await a.query('DELETE FROM made');
    await a.close();
    const again = await openAt('a');
    expect(await again.query('SELECT at FROM made')).toEqual([]);
    await again.close();
  });

  it('another migration makes another seed; the older one stays until it is an hour old', async () => {
    const before = seedsIn();
    const db = await openAt('c', v2);
    expect(await db.query("SELECT to_regclass('later') IS NOT NULL AS there")).toEqual([{ there: true }]);
    await db.close();
    const after = seedsIn();
    expect(after).toHaveLength(before.length + 1);
    expect(after).toEqual(expect.arrayContaining(before));
  });

  it('a shared PGlite is seeded with every schema on it', async () => {
    const services = [
      { name: 'one', migrations: v1 },
      { name: 'two', migrations: v2 },
    ];
    const open = async (sub: string) => {
      const host = await openPgliteHost(path.join(dir, sub), sharedSeed('shared-test', services));
      return Promise.all(services.map((s) => openServiceDb(s.name, s.migrations, { pglite: host })));
    };
    const [one, two] = await open('x');
    const [oneAgain, twoAgain] = await open('y');
    expect(await oneAgain.query('SELECT at FROM made')).toEqual(await one.query('SELECT at FROM made'));
    expect(await twoAgain.query('SELECT at FROM made')).toEqual(await two.query('SELECT at FROM made'));
    expect(await two.query('SELECT at FROM made')).not.toEqual(await one.query('SELECT at FROM made'));
    expect(await twoAgain.query('SELECT count(*)::int AS n FROM schema_migrations')).toEqual([{ n: 2 }]);
    for (const db of [one, two, oneAgain, twoAgain]) await db.close();
  });

  it('the pristine cluster and every seed in the cache are whole: each carries the synced mark', async () => {
    const base = await pristineCluster();
    expect(base && path.dirname(base)).toBe(cache);
    for (const name of seedsIn()) expect(fs.existsSync(path.join(cache, name, 'gateway-synced'))).toBe(true);
  });
});
