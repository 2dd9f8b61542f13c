import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createMemoryBus } from '@gateway/bus';
import { DEFAULT_CONFIG, parseConfig } from '@gateway/config';
import { describeOnEngines, openTestDb, type TestDb } from '@gateway/db/testing';
import { errorHandler } from '@gateway/errors';
import { createLogger, INTERNAL } from '@gateway/service-kit';
import { type BillingService, createBillingService } from '../index';
import { migrations } from '../migrations';

/**
 * What the consoles read (GET /v1/generations, GET /v1/activity, GET /admin/v1/accounts[/{id}]) on both engines'
 * SQL, over records written straight into the tables, so times can sit on a day's edge or share a microsecond.
 */
describeOnEngines('the console routes', (engine) => {
  const adminToken = 'admin-token-for-the-console-routes-test';
  let t: TestDb;
  let billing: BillingService;
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    t = await openTestDb(engine, 'billing', migrations);
    billing = await createBillingService({
      db: t.db,
      bus: createMemoryBus(),
      config: parseConfig({ ...DEFAULT_CONFIG, limits: { rate_limit: { requests: 77, interval: '30s' }, job_concurrency: 4 } }),
      logger: createLogger('test', 'silent'),
      adminToken,
    });
    server = http.createServer(
      express()
        .use(billing.adminRouter)
        .use(billing.publicRouter)
        .use(errorHandler(() => 'req_test')),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);
  afterAll(async () => {
    await new Promise<void>((r) => server?.close(() => r()));
    await billing?.stop();
    await t?.close();
  });

  /** A keyed route as the edge forwards it: the verified account in the internal headers. */
  const asAccount = async (accountId: string, path: string) => {
    const r = await fetch(`${url}${path}`, { headers: { [INTERNAL.accountId]: accountId, [INTERNAL.keyId]: 'key_x' } });
    return { status: r.status, json: await r.json() };
  };
  const admin = async (method: string, path: string, body?: unknown, token = adminToken) => {
    const r = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, json: text ? JSON.parse(text) : undefined };
  };
  const newAccount = async (credits: number | string, extra: object = {}) =>
    (await admin('POST', '/admin/v1/accounts', { credits, ...extra })).json.data.account_id as string;

  interface Rec {
    id: string;
    account: string;
    model: string;
    at: string;
    cost: string;
    tokens?: [prompt: number, completion: number, reasoning: number, cached: number];
    status?: string;
  }
  const insert = (r: Rec) =>
    t.db.query(
      `INSERT INTO usage_records (request_id, account_id, key_id, model, streamed, status, tokens_prompt, tokens_completion,
         tokens_reasoning, tokens_cached, total_cost, created_at, provider)
       VALUES ($1, $2, 'key_x', $3, false, $4, $5, $6, $7, $8, $9, $10::timestamptz, 'sim')`,
      [r.id, r.account, r.model, r.status ?? 'succeeded', ...(r.tokens ?? [0, 0, 0, 0]), r.cost, r.at],
    );

  /** Every page of a listing, following next_cursor, with the answers seen on the way. */
  async function allPages(get: (cursor?: string) => Promise<{ status: number; json: any }>) {
    const pages: any[] = [];
    let cursor: string | undefined;
    do {
      const r = await get(cursor);
      expect(r.status).toBe(200);
      pages.push(r.json);
      cursor = r.json.next_cursor ?? undefined;
      expect(r.json.has_more).toBe(cursor !== undefined);
    } while (cursor && pages.length < 20);
    return pages;
  }

  describe('GET /v1/generations', () => {
    let a: string;
    let b: string;
    // Two records in one microsecond (the id breaks the tie), two in one millisecond: a cursor rounded to the
    // millisecond would repeat or skip them.
    const times = [
      ['req_g1', '2026-03-01T10:00:00.000001Z'],
      ['req_g2', '2026-03-01T10:00:00.000500Z'],
      ['req_g3', '2026-03-01T10:00:00.000500Z'],
      ['req_g4', '2026-03-01T10:00:00.000900Z'],
      ['req_g5', '2026-03-02T09:00:00Z'],
    ] as const;
    beforeAll(async () => {
      a = await newAccount(1);
      b = await newAccount(1);
      for (const [i, [id, at]] of times.entries())
        await insert({ id, account: a, model: i % 2 ? 'm/odd' : 'm/even', at, cost: String(1_000_000 * (i + 1)), tokens: [10, 20, 5, 3] });
      await insert({ id: 'req_other', account: b, model: 'm/even', at: '2026-03-01T10:00:00.000700Z', cost: '7' });
    });

    it('pages the account’s own records newest first, each exactly the generation record, none repeated or lost', async () => {
      const pages = await allPages((cursor) => asAccount(a, `/v1/generations?limit=2${cursor ? `&cursor=${cursor}` : ''}`));
      expect(pages.map((p) => p.data.length)).toEqual([2, 2, 1]);
      const rows = pages.flatMap((p) => p.data);
      expect(rows.map((r) => r.id)).toEqual(['req_g5', 'req_g4', 'req_g3', 'req_g2', 'req_g1']);
      for (const row of rows) expect(row).toEqual((await asAccount(a, `/v1/generation?id=${row.id}`)).json.data);
      expect(rows[0]).toMatchObject({ model: 'm/even', cost: '0.005', usage: 0.01, provider: 'sim', tokens_reasoning: 5, tokens_cached: 3 });
      // The other account sees only its own.
      expect((await asAccount(b, '/v1/generations')).json).toEqual({
        data: [expect.objectContaining({ id: 'req_other' })],
        has_more: false,
        next_cursor: null,
      });
    });

    it('filters by model, paging within it', async () => {
      const pages = await allPages((cursor) => asAccount(a, `/v1/generations?model=m/even&limit=1${cursor ? `&cursor=${cursor}` : ''}`));
      expect(pages.flatMap((p) => p.data).map((r: any) => r.id)).toEqual(['req_g5', 'req_g3', 'req_g1']);
      expect((await asAccount(a, '/v1/generations?model=m/none')).json).toEqual({ data: [], has_more: false, next_cursor: null });
    });

    it('refuses a bad limit or a cursor it did not give with 400 invalid_request', async () => {
      const forged = Buffer.from('2026-03-01T10:00:00.000Z|req_g1').toString('base64url');
      const impossible = Buffer.from('2026-02-30T10:00:00.000000Z|req_g1').toString('base64url');
      for (const q of ['limit=0', 'limit=201', 'limit=2.5', 'limit=x', 'cursor=nonsense', `cursor=${forged}`, `cursor=${impossible}`]) {
        const r = await asAccount(a, `/v1/generations?${q}`);
        expect({ q, status: r.status, code: r.json.error?.code }).toEqual({ q, status: 400, code: 'invalid_request' });
      }
    });
  });

  describe('GET /v1/activity', () => {
    let a: string;
    beforeAll(async () => {
      a = await newAccount(1);
      const other = await newAccount(1);
      // The last microsecond of a day and the first of the next; amounts in nano-USD that two decimals would hide.
      await insert({ id: 'req_a1', account: a, model: 'm/b', at: '2026-03-01T23:59:59.999999Z', cost: '1', tokens: [1, 2, 0, 0] });
      await insert({ id: 'req_a2', account: a, model: 'm/a', at: '2026-03-01T12:00:00Z', cost: '4500000', tokens: [3, 4, 1, 2] });
      await insert({ id: 'req_a3', account: a, model: 'm/b', at: '2026-03-01T00:00:00Z', cost: '2', tokens: [10, 20, 3, 4] });
      await insert({ id: 'req_a4', account: a, model: 'm/b', at: '2026-03-02T00:00:00Z', cost: '0', status: 'failed' });
      await insert({ id: 'req_a5', account: other, model: 'm/b', at: '2026-03-01T12:00:00Z', cost: '999' });
      // Relative to now, for the `days` window: today, and 40 days ago.
      const ago = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();
      await insert({ id: 'req_now', account: a, model: 'm/now', at: ago(0), cost: '3', tokens: [1, 1, 0, 0] });
      await insert({ id: 'req_old', account: a, model: 'm/old', at: ago(40), cost: '5' });
    });

    it('sums one UTC day per model, exactly, in date then model order, for the calling account only', async () => {
      const r = await asAccount(a, '/v1/activity?date=2026-03-01');
      expect(r.json).toEqual({
        data: [
          {
            date: '2026-03-01',
            model: 'm/a',
            requests: 1,
            usage: 0,
            usage_exact: '0.0045',
            tokens_prompt: 3,
            tokens_completion: 4,
            tokens_reasoning: 1,
            tokens_cached: 2,
          },
          {
            date: '2026-03-01',
            model: 'm/b',
            requests: 2,
            usage: 0,
            usage_exact: '0.000000003',
            tokens_prompt: 11,
            tokens_completion: 22,
            tokens_reasoning: 3,
            tokens_cached: 4,
          },
        ],
      });
      // A failed record with no charge is still a request of its day.
      expect((await asAccount(a, '/v1/activity?date=2026-03-02')).json.data).toEqual([
        {
          date: '2026-03-02',
          model: 'm/b',
          requests: 1,
          usage: 0,
          usage_exact: '0',
          tokens_prompt: 0,
          tokens_completion: 0,
          tokens_reasoning: 0,
          tokens_cached: 0,
        },
      ]);
      expect((await asAccount(a, '/v1/activity?date=2026-02-28')).json).toEqual({ data: [] });
    });

    it('takes the last `days` UTC days, 30 by default', async () => {
      const models = async (q: string) => (await asAccount(a, `/v1/activity${q}`)).json.data.map((d: any) => d.model);
      expect(await models('')).toEqual(['m/now']);
      expect(await models('?days=1')).toEqual(['m/now']);
      expect(await models('?days=90')).toEqual(expect.arrayContaining(['m/now', 'm/old']));
      expect((await asAccount(a, '/v1/activity?days=1')).json.data[0]).toMatchObject({
        date: new Date().toISOString().slice(0, 10),
        usage_exact: '0.000000003',
      });
    });

    it('refuses a bad window with 400 invalid_request', async () => {
      for (const q of ['days=0', 'days=91', 'days=1.5', 'days=x', 'date=2026-02-30', 'date=2026-3-1', 'date=0000-01-01', 'days=3&date=2026-03-01']) {
        const r = await asAccount(a, `/v1/activity?${q}`);
        expect({ q, status: r.status, code: r.json.error?.code }).toEqual({ q, status: 400, code: 'invalid_request' });
      }
    });
  });

  describe('GET /admin/v1/accounts', () => {
    let plain: string;
    let labelled: string;
    let keyId: string;
    let revokedKeyId: string;
    beforeAll(async () => {
      plain = await newAccount('1.000000001', { rate_limit: { requests: 5, interval: '10s' }, job_concurrency: 2 });
      labelled = await newAccount(2);
      keyId = (await admin('POST', `/admin/v1/accounts/${labelled}/keys`, { label: 'Nightly 100%_batch', limit: '0.5' })).json.data.key_id;
      revokedKeyId = (await admin('POST', `/admin/v1/accounts/${labelled}/keys`, { label: 'old' })).json.data.key_id;
      expect((await admin('DELETE', `/admin/v1/keys/${revokedKeyId}`)).status).toBe(204);
      await admin('PATCH', `/admin/v1/accounts/${labelled}`, { suspended: true });
    });

    it('pages every account newest first, with its money and limits', async () => {
      const pages = await allPages((cursor) => admin('GET', `/admin/v1/accounts?limit=2${cursor ? `&cursor=${cursor}` : ''}`));
      const rows = pages.flatMap((p) => p.data);
      const [{ n }] = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM accounts');
      expect(rows).toHaveLength(n);
      expect(new Set(rows.map((r: any) => r.account_id)).size).toBe(n);
      expect(rows.slice(0, 2).map((r: any) => r.account_id)).toEqual([labelled, plain]);
      expect(rows[1]).toEqual({
        account_id: plain,
        created_at: expect.any(String),
        suspended: false,
        credits: 1,
        usage: 0,
        held: 0,
        available: 1,
        credits_exact: '1.000000001',
        usage_exact: '0',
        held_exact: '0',
        available_exact: '1.000000001',
        rate_limit: { requests: 5, interval: '10s' },
        job_concurrency: 2,
      });
      // An account that sets neither shows the config's.
      expect(rows[0]).toMatchObject({ suspended: true, rate_limit: { requests: 77, interval: '30s' }, job_concurrency: 4 });
    });

    it('pages accounts created in the same microsecond by id', async () => {
      await t.db.query(`UPDATE accounts SET created_at = '2020-01-01T00:00:00Z' WHERE id IN ($1, $2)`, [plain, labelled]);
      try {
        const rows = (await allPages((cursor) => admin('GET', `/admin/v1/accounts?limit=1${cursor ? `&cursor=${cursor}` : ''}`))).flatMap(
          (p) => p.data,
        );
        expect(rows.slice(-2).map((r: any) => r.account_id)).toEqual([plain, labelled].sort().reverse());
      } finally {
        await t.db.query(`UPDATE accounts SET created_at = now() WHERE id IN ($1, $2)`, [plain, labelled]);
      }
    });

    it('searches account id prefixes, key id prefixes and labels (any case, wildcards literal)', async () => {
      const ids = async (search: string) =>
        (await admin('GET', `/admin/v1/accounts?search=${encodeURIComponent(search)}`)).json.data.map((r: any) => r.account_id);
      expect(await ids(plain.slice(0, 12))).toEqual([plain]);
      expect(await ids(keyId.slice(0, 8))).toEqual([labelled]);
      expect(await ids('nightly 100%_')).toEqual([labelled]);
      expect(await ids('100%')).toEqual([labelled]);
      // As a pattern, `ly%b` would match "Nightly 100%_batch"; as the text typed, nothing has it.
      expect(await ids('ly%b')).toEqual([]);
      expect(await ids('ly_1')).toEqual([]);
      expect(await ids('no such thing')).toEqual([]);
      expect((await admin('GET', '/admin/v1/accounts?search=&limit=1')).json.data).toHaveLength(1);
    });

    it('answers one account with its keys, never a secret, and 404 for an unknown one', async () => {
      const r = await admin('GET', `/admin/v1/accounts/${labelled}`);
      expect(r.status).toBe(200);
      expect(r.json.data).toMatchObject({ account_id: labelled, suspended: true, credits: 2, total_credits: 2, balance: 2, currency: 'USD' });
      expect(r.json.data.keys).toEqual([
        expect.objectContaining({ key_id: revokedKeyId, label: 'old', limit: null, revoked: true, revoked_at: expect.any(String) }),
        {
          key_id: keyId,
          label: 'Nightly 100%_batch',
          limit: 0.5,
          usage: 0,
          limit_exact: '0.5',
          usage_exact: '0',
          created_at: expect.any(String),
          expires_at: null,
          revoked: false,
          revoked_at: null,
          last_used_at: null,
        },
      ]);
      expect(JSON.stringify(r.json)).not.toMatch(/sk_live_|hash|whsec_/);
      const missing = await admin('GET', '/admin/v1/accounts/acct_nope');
      expect({ status: missing.status, code: missing.json.error.code }).toEqual({ status: 404, code: 'model_unavailable' });
    });

    it('refuses a wrong token with 401 and a bad query with 400', async () => {
      for (const p of ['/admin/v1/accounts', `/admin/v1/accounts/${plain}`]) {
        const r = await admin('GET', p, undefined, 'wrong-token');
        expect({ p, status: r.status, code: r.json.error.code }).toEqual({ p, status: 401, code: 'invalid_api_key' });
      }
      for (const q of ['limit=0', 'limit=500', 'cursor=abc', `search=${'x'.repeat(201)}`]) {
        const r = await admin('GET', `/admin/v1/accounts?${q}`);
        expect({ q, status: r.status, code: r.json.error?.code }).toEqual({ q, status: 400, code: 'invalid_request' });
      }
    });
  });
});
