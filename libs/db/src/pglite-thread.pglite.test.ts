import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openPglite } from './pglite';
import { sharedPgliteThread } from './pglite-thread';

// Each test starts PGlites (WebAssembly Postgres): seconds each on a CI host busy with the e2e suites beside it.
jest.setTimeout(120_000);

/** The process's PGlite thread, without opening anything on it. */
const currentThread = () => sharedPgliteThread(() => undefined);

describe("the process's PGlite thread: every database of the process on one worker", () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-pglite-thread-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('runs two databases on one thread, each with its own data', async () => {
    const billing = await openPglite(path.join(dir, 'billing'));
    const thread = currentThread();
    const services = await openPglite(path.join(dir, 'services'));
    expect(currentThread()).toBe(thread);
    await billing.exec('CREATE TABLE t (v text)');
    await services.exec('CREATE TABLE t (v text)');
    await billing.query('INSERT INTO t VALUES ($1)', ['billing']);
    await services.query('INSERT INTO t VALUES ($1)', ['services']);
    expect(await billing.query('SELECT v FROM t')).toEqual([{ v: 'billing' }]);
    expect(await services.query('SELECT v FROM t')).toEqual([{ v: 'services' }]);
    await Promise.all([billing.close(), services.close()]);
  });

  it("serves one database's statements while the other's transaction waits on them (a video submit's hold inside the jobs lock)", async () => {
    const [jobs, billing] = await Promise.all([openPglite(path.join(dir, 'jobs')), openPglite(path.join(dir, 'billing'))]);
    await jobs.exec('CREATE TABLE jobs (id int PRIMARY KEY)');
    await billing.exec('CREATE TABLE holds (id int PRIMARY KEY)');
    await jobs.transaction(async (tx) => {
      await tx.query('INSERT INTO jobs VALUES (1)');
      // On one session this would wait for the very transaction waiting on it; on two databases it must not.
      await billing.transaction(async (b) => {
        await b.query('INSERT INTO holds VALUES (1)');
      });
      await tx.query('INSERT INTO jobs VALUES (2)');
    });
    expect(await jobs.query('SELECT count(*)::int AS n FROM jobs')).toEqual([{ n: 2 }]);
    expect(await billing.query('SELECT count(*)::int AS n FROM holds')).toEqual([{ n: 1 }]);
    await Promise.all([jobs.close(), billing.close()]);
  });

  it('keeps serving the other database when one closes, ends with the last, and a later open gets a new thread', async () => {
    const a = await openPglite(path.join(dir, 'a'));
    const b = await openPglite(path.join(dir, 'b'));
    const thread = currentThread();
    await a.close();
    await expect(a.query('SELECT 1')).rejects.toThrow('the database is closed');
    expect(await b.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await b.close();
    const again = await openPglite(path.join(dir, 'a'));
    expect(currentThread()).not.toBe(thread);
    expect(await again.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await again.close();
  });

  it('refuses the open of a database that cannot start, and the others on the thread go on', async () => {
    const good = await openPglite(path.join(dir, 'good'));
    // A file where the data directory should be: PGlite cannot make or open a cluster there.
    const bad = path.join(dir, 'bad');
    fs.mkdirSync(bad);
    fs.writeFileSync(path.join(bad, 'PG_VERSION'), 'not a cluster');
    await expect(openPglite(bad)).rejects.toThrow(/PGlite failed to start/);
    expect(await good.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await good.close();
  });
});
