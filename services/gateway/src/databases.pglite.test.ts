import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openServiceDb, type Db } from '@gateway/db';
import { migrations as jobsMigrations } from '@gateway/jobs';
import { migrations as mcpMigrations } from '@gateway/mcp';
import { createLogger } from '@gateway/service-kit';
import { type EmbeddedDatabases, SHARED_DIR, openEmbeddedDatabases } from './databases';
import { BACKUP_DIR } from './shared-layout-upgrade';

const logger = createLogger('test', 'silent');
const tableExists = async (db: Db, table: string) =>
  (await db.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table]))[0].t !== null;
const closeAll = async (d: EmbeddedDatabases) => {
  for (const db of [d.billing, d.media, d.jobs, d.catalogue, d.mcp]) await db.close();
};

/** Each test's own data directory. */
let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-embedded-dbs-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the embedded gateway databases', () => {
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
  }, 180_000);
});

/** Every row of every table, as PostgreSQL writes it: what must come across unchanged. */
async function contents(db: Db, tables: string[]): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const t of tables) out[t] = (await db.query<{ r: string }>(`SELECT row_to_json(x)::text AS r FROM ${t} x ORDER BY 1`)).map((row) => row.r);
  return out;
}

const JOB_TABLES = ['jobs', 'outbox'];
const MCP_TABLES = ['sessions', 'session_jobs', 'session_events'];

/** A data directory as every gateway wrote it until 2026-11-26: jobs and mcp each in a PGlite of their own. */
async function writeOldLayout(dir: string): Promise<{ jobs: Record<string, string[]>; mcp: Record<string, string[]> }> {
  const jobs = await openServiceDb('jobs', jobsMigrations, { dataDir: dir });
  await jobs.query(
    `INSERT INTO jobs (id, account_id, key_id, model, category, status, input, n, duration_seconds, gateway_request_id, hold, inference_time, charge_nano, created_at)
     VALUES ('job_1', 'acct_1', 'key_1', 'demo/video-small', 'video', 'queued', '{"prompt":"a cat","nested":{"deep":[1,2.5,"ü"]}}', 1,
             4.125, 'req_1', '{"hold_id":"hold_1","amount_nano":"123456789012345678"}', 0.1 + 0.2, 123456789012345678901234567890.000000001,
             '2026-01-02T03:04:05.678Z')`,
  );
  for (let i = 0; i < 3; i++) await jobs.query(`INSERT INTO outbox (topic, event) VALUES ('jobs', $1::jsonb)`, [JSON.stringify({ i })]);
  const mcp = await openServiceDb('mcp', mcpMigrations, { dataDir: dir });
  await mcp.query(
    `INSERT INTO sessions (id, account_id, key_id, protocol_version, delivered_seq) VALUES ('mcp_1', 'acct_1', 'key_1', '2025-06-18', 9007199254740993)`,
  );
  await mcp.query(`INSERT INTO session_jobs (job_id, session_id, account_id) VALUES ('job_1', 'mcp_1', 'acct_1')`);
  await mcp.query(`INSERT INTO session_events (session_id, dedupe_key, message) VALUES ('mcp_1', 'job:job_1:queued', '{"jsonrpc":"2.0"}')`);
  const before = { jobs: await contents(jobs, JOB_TABLES), mcp: await contents(mcp, MCP_TABLES) };
  await jobs.close();
  await mcp.close();
  return before;
}

describe('a data directory with a PGlite per service, at the first start that shares one', () => {
  it('moves every row into the shared database exactly, sequences where they were, and keeps the old databases aside', async () => {
    const before = await writeOldLayout(dir);

    const dbs = await openEmbeddedDatabases({ dataDir: dir }, logger);
    expect(dbs.layout).toBe('shared');
    expect(await contents(dbs.jobs, JOB_TABLES)).toEqual(before.jobs);
    expect(await contents(dbs.mcp, MCP_TABLES)).toEqual(before.mcp);
    // The next outbox row and session event number on from the old ones, never reusing an id.
    expect(await dbs.jobs.query(`INSERT INTO outbox (topic, event) VALUES ('jobs', '{}') RETURNING seq::int AS seq`)).toEqual([{ seq: 4 }]);
    expect(
      await dbs.mcp.query(`INSERT INTO session_events (session_id, dedupe_key, message) VALUES ('mcp_1', 'k2', '{}') RETURNING seq::int AS seq`),
    ).toEqual([{ seq: 2 }]);
    // Foreign keys hold again after the copy.
    await expect(dbs.mcp.query(`INSERT INTO session_jobs (job_id, session_id, account_id) VALUES ('job_2', 'mcp_none', 'acct_1')`)).rejects.toThrow();
    await closeAll(dbs);

    expect(fs.readdirSync(dir).sort()).toEqual(['billing', BACKUP_DIR, SHARED_DIR].sort());
    expect(fs.readdirSync(path.join(dir, BACKUP_DIR)).sort()).toEqual(['jobs', 'mcp']);

    // The next start finds the shared layout and copies nothing again.
    const again = await openEmbeddedDatabases({ dataDir: dir }, logger);
    expect(await contents(again.jobs, ['jobs'])).toEqual({ jobs: before.jobs.jobs });
    await closeAll(again);
  }, 300_000);

  it('a copy that died half-way is started again from the untouched old databases', async () => {
    const before = await writeOldLayout(dir);
    // What a start killed during the copy leaves: a partial shared database, the old ones in place.
    fs.mkdirSync(path.join(dir, `${SHARED_DIR}.partial`, 'base'), { recursive: true });
    fs.writeFileSync(path.join(dir, `${SHARED_DIR}.partial`, 'base', 'garbage'), 'half a page');

    const dbs = await openEmbeddedDatabases({ dataDir: dir }, logger);
    expect(dbs.layout).toBe('shared');
    expect(await contents(dbs.mcp, MCP_TABLES)).toEqual(before.mcp);
    expect(fs.existsSync(path.join(dir, `${SHARED_DIR}.partial`))).toBe(false);
    await closeAll(dbs);
  }, 300_000);

  it('a database the copy cannot take (a table the service does not define) is left as it was, and the gateway runs on the old layout', async () => {
    const old = await openServiceDb('jobs', jobsMigrations, { dataDir: dir });
    await old.query(`CREATE TABLE kept_from_before (note text)`);
    await old.query(`INSERT INTO kept_from_before VALUES ('still here')`);
    await old.close();

    const dbs = await openEmbeddedDatabases({ dataDir: dir }, logger);
    expect(dbs.layout).toBe('per-service');
    expect(await dbs.jobs.query('SELECT note FROM kept_from_before')).toEqual([{ note: 'still here' }]);
    expect(fs.existsSync(path.join(dir, SHARED_DIR))).toBe(false);
    expect(fs.existsSync(path.join(dir, BACKUP_DIR))).toBe(false);
    await closeAll(dbs);
  }, 300_000);
});
