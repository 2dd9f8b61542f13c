import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Db } from '@gateway/db';
import { createLogger } from '@gateway/service-kit';
import { type EmbeddedDatabases, openEmbeddedDatabases } from './databases';

const logger = createLogger('test', 'silent');
const tableExists = async (db: Db, table: string) =>
  (await db.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table]))[0].t !== null;
const closeAll = async (d: EmbeddedDatabases) => {
  for (const db of [d.billing, d.media, d.jobs, d.catalogue, d.mcp]) await db.close();
};

describe('the embedded gateway databases', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-embedded-dbs-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('a new data directory holds two PGlites: billing, and the other four services in a schema each', async () => {
    const dbs = await openEmbeddedDatabases({ dataDir: dir }, logger);
    expect(dbs.layout).toBe('shared');
    expect(fs.readdirSync(dir).sort()).toEqual(['billing', 'services']);
    // Each service sees its own tables only, as on PostgreSQL.
    expect(await tableExists(dbs.jobs, 'jobs')).toBe(true);
    expect(await tableExists(dbs.jobs, 'accounts')).toBe(false);
    expect(await tableExists(dbs.catalogue, 'jobs')).toBe(false);
    expect(await tableExists(dbs.billing, 'accounts')).toBe(true);
    const schemas = await dbs.mcp.query<{ s: string }>(
      `SELECT nspname AS s FROM pg_namespace WHERE nspname IN ('media', 'jobs', 'catalogue', 'mcp', 'billing') ORDER BY 1`,
    );
    expect(schemas.map((r) => r.s)).toEqual(['catalogue', 'jobs', 'mcp', 'media']);
    await closeAll(dbs);
  }, 60_000);
});
