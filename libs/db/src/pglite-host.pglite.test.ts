import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Db } from './db';
import { openServiceDb } from './open';
import { openPgliteHost } from './pglite';

const migrationsOf = (service: string) => [
  { id: '001', sql: `CREATE TABLE items (id int PRIMARY KEY, owner text NOT NULL DEFAULT '${service}')` },
  { id: '002', sql: `CREATE FUNCTION item_owner(p int) RETURNS text LANGUAGE sql AS $$ SELECT owner FROM items WHERE id = p $$` },
];

// Every test starts a PGlite of its own (a WebAssembly Postgres on a worker thread): 0.6 s idle, and past the
// 5 s default on a CI host busy with the e2e suites beside it (CI run of stop 22 failed so).
jest.setTimeout(60_000);

describe('services sharing one PGlite, a schema each', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-pglite-host-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const openBoth = async (at?: string) => {
    const host = await openPgliteHost(at);
    const [jobs, media] = await Promise.all([
      openServiceDb('jobs', migrationsOf('jobs'), { pglite: host }),
      openServiceDb('media', migrationsOf('media'), { pglite: host }),
    ]);
    return { jobs, media };
  };
  const closeAll = async (...dbs: Db[]) => {
    for (const db of dbs) await db.close();
  };

  it('each service sees its own tables, migrations and functions under the same names', async () => {
    const { jobs, media } = await openBoth();
    await jobs.query('INSERT INTO items (id) VALUES (1)');
    await media.query('INSERT INTO items (id) VALUES (1), (2)');

    expect(await jobs.query('SELECT id, owner FROM items ORDER BY id')).toEqual([{ id: 1, owner: 'jobs' }]);
    expect(await media.query('SELECT id, owner FROM items ORDER BY id')).toEqual([
      { id: 1, owner: 'media' },
      { id: 2, owner: 'media' },
    ]);
    // A function resolves the tables of the schema that calls it.
    expect(await media.query('SELECT item_owner(1) AS o')).toEqual([{ o: 'media' }]);
    expect(await jobs.query('SELECT count(*)::int AS n FROM schema_migrations')).toEqual([{ n: 2 }]);
    await closeAll(jobs, media);
  });

  it("another service's statements wait for a transaction and never run inside it, so its rollback takes none of them", async () => {
    const { jobs, media } = await openBoth();
    let mediaWrote: Promise<unknown> | undefined;
    await expect(
      jobs.transaction(async (tx) => {
        await tx.query('INSERT INTO items (id) VALUES (10)');
        // Sent while the jobs transaction holds the session: it must land in media's schema, after the rollback.
        mediaWrote = media.query('INSERT INTO items (id) VALUES (10)');
        await tx.query('SELECT 1');
        throw new Error('the jobs transaction fails');
      }),
    ).rejects.toThrow('the jobs transaction fails');
    await mediaWrote;

    expect(await jobs.query('SELECT id FROM items')).toEqual([]);
    expect(await media.query('SELECT id, owner FROM items')).toEqual([{ id: 10, owner: 'media' }]);
    await closeAll(jobs, media);
  });

  it('statements of several services interleaved each land in their own schema', async () => {
    const { jobs, media } = await openBoth();
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 60; i++) {
      const db = i % 3 === 0 ? jobs : media;
      writes.push(
        i % 4 === 0
          ? db.transaction((tx) => tx.query('INSERT INTO items (id) VALUES ($1)', [i]))
          : db.query('INSERT INTO items (id) VALUES ($1)', [i]),
      );
    }
    await Promise.all(writes);
    const owners = async (db: Db) => (await db.query<{ id: number }>('SELECT id FROM items ORDER BY id')).map((r) => r.id);
    expect(await owners(jobs)).toEqual([...Array(60).keys()].filter((i) => i % 3 === 0));
    expect(await owners(media)).toEqual([...Array(60).keys()].filter((i) => i % 3 !== 0));
    await closeAll(jobs, media);
  });

  it('a service that closed its handle is refused, while the others go on until the last one closes', async () => {
    const host = await openPgliteHost();
    const jobs = await host.schema('jobs');
    const media = await host.schema('media');
    await jobs.close();
    await expect(jobs.query('SELECT 1')).rejects.toThrow('the database is closed');
    await expect(media.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
    await media.close();
    // The last close ended the worker: a new schema on it is refused, never left waiting on a thread that is gone.
    await expect(host.schema('late')).rejects.toThrow('closed with the last database');
  });

  it('the schemas and their rows are there again when the directory is reopened', async () => {
    const at = path.join(dir, 'services');
    const first = await openBoth(at);
    await first.jobs.query('INSERT INTO items (id) VALUES (7)');
    await closeAll(first.jobs, first.media);

    const again = await openBoth(at);
    expect(await again.jobs.query('SELECT id, owner FROM items')).toEqual([{ id: 7, owner: 'jobs' }]);
    expect(await again.media.query('SELECT id FROM items')).toEqual([]);
    await closeAll(again.jobs, again.media);
  });

  it('refuses a schema name it would have to quote', async () => {
    const host = await openPgliteHost();
    await expect(host.schema('jobs"; DROP TABLE items; --')).rejects.toThrow('bad schema name');
    const db = await host.schema('ok');
    await db.close();
  });
});
