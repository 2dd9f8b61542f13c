import crypto from 'node:crypto';
import { nano } from './support/money';
import { type Mode, openAccount, settled, type TestGateway, useGatewaySuite } from './support/harness';

/**
 * The API the consoles read (issue 39): GET /v1/generations, GET /v1/activity and the admin account list, in both
 * run modes, on real calls (text and an image, all simulated offline) made by two accounts.
 */
const text = (id: string) => ({
  id,
  name: id,
  category: 'text',
  status: 'available',
  context_length: 4096,
  max_output_tokens: 20,
  pricing: { prompt: '0.000001234', completion: '0.000002' },
  endpoints: [{ provider: 'sim', model: 'sim-1' }],
});
const config = {
  providers: [{ id: 'sim', kind: 'simulated' }],
  models: [
    text('console/chat'),
    text('console/other'),
    {
      id: 'console/image',
      name: 'Image',
      category: 'image',
      status: 'available',
      pricing: { image: '0.04' },
      endpoints: [{ provider: 'sim', model: 'sim-image' }],
    },
  ],
};

/** Nothing to start besides the gateway: every model is served by the simulated provider. */
const noUpstreams = async () => ({ close: async () => {} });

describe.each(['embedded', 'fleet'] as Mode[])('the console API through the %s gateway', (mode) => {
  let gw: TestGateway;
  let a: { accountId: string; key: string; keyId: string };
  let b: { accountId: string; key: string; keyId: string };
  /** The request ids each account's calls were given, in the order they were made. */
  const made: Record<'a' | 'b', string[]> = { a: [], b: [] };
  const label = `console-${crypto.randomBytes(4).toString('hex')}`;

  const get = async (path: string, key: string) => {
    const r = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: r.status, json: await r.json() };
  };
  const call = async (who: 'a' | 'b', route: string, body: object) => {
    const r = await fetch(`${gw.url}/v1/${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${(who === 'a' ? a : b).key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    made[who].push(r.headers.get('x-gateway-request-id')!);
  };
  /** Every page of a listing with `limit`, following next_cursor. */
  const allPages = async (path: string, key: string, limit: number) => {
    const rows: any[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const r = await get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, key);
      expect(r.status).toBe(200);
      expect(r.json.data.length).toBeLessThanOrEqual(limit);
      expect(r.json.has_more).toBe(r.json.next_cursor !== null);
      rows.push(...r.json.data);
      cursor = r.json.next_cursor;
    } while (cursor && ++pages < 50);
    return rows;
  };

  useGatewaySuite(mode, { upstreams: noUpstreams, config: () => config, credits: 5 }, (s) => {
    gw = s.gw;
    a = s.acct;
  });

  beforeAll(async () => {
    b = await openAccount(gw.admin, 5, { label });
    const chat = (model: string, content: string) => ({ model, messages: [{ role: 'user', content }], max_tokens: 10 });
    for (const words of ['one', 'two words', 'three more words']) await call('a', 'chat/completions', chat('console/chat', words));
    await call('a', 'chat/completions', chat('console/other', 'elsewhere'));
    await call('a', 'images/generations', { model: 'console/image', prompt: 'a lighthouse', n: 2 });
    await call('b', 'chat/completions', chat('console/chat', 'the other account'));
    await settled(gw, a.accountId);
    await settled(gw, b.accountId);
  }, 60_000);

  it('GET /v1/generations pages each account’s own records, newest first, each its generation record', async () => {
    const rows = await allPages('/v1/generations', a.key, 2);
    expect(rows.map((r) => r.id)).toEqual([...made.a].reverse());
    for (let i = 1; i < rows.length; i++) expect(rows[i - 1].created_at >= rows[i].created_at).toBe(true);
    for (const row of rows) expect(row).toEqual((await get(`/v1/generation?id=${row.id}`, a.key)).json.data);
    expect(rows.find((r) => r.model === 'console/image')).toMatchObject({ cost: '0.08', provider: 'sim', status: 'succeeded' });

    const theirs = await get('/v1/generations', b.key);
    expect(theirs.json).toMatchObject({ has_more: false, next_cursor: null });
    expect(theirs.json.data.map((r: any) => r.id)).toEqual(made.b);
    expect((await get('/v1/generations?model=console/other', a.key)).json.data.map((r: any) => r.id)).toEqual([made.a[3]]);
  });

  it('GET /v1/activity is, per day and model, exactly the sum of the generation records', async () => {
    const records = await allPages('/v1/generations', a.key, 200);
    // Summed here from the records, per UTC day of their created_at (a run across midnight spans two days).
    const expected = new Map<string, any>();
    for (const r of records) {
      const date = r.created_at.slice(0, 10);
      const k = `${date} ${r.model}`;
      const e = expected.get(k) ?? { date, model: r.model, requests: 0, usage: 0n, p: 0, c: 0, reasoning: 0, cached: 0 };
      expected.set(k, {
        ...e,
        requests: e.requests + 1,
        usage: e.usage + nano(r.cost),
        p: e.p + r.tokens_prompt,
        c: e.c + r.tokens_completion,
        reasoning: e.reasoning + r.tokens_reasoning,
        cached: e.cached + r.tokens_cached,
      });
    }
    const sorted = [...expected.keys()].sort();
    const { status, json } = await get('/v1/activity?days=2', a.key);
    expect(status).toBe(200);
    expect(
      json.data.map((d: any) => ({
        key: `${d.date} ${d.model}`,
        requests: d.requests,
        usage: nano(d.usage_exact),
        tokens: [d.tokens_prompt, d.tokens_completion, d.tokens_reasoning, d.tokens_cached],
      })),
    ).toEqual(
      sorted.map((k) => {
        const e = expected.get(k);
        return { key: k, requests: e.requests, usage: e.usage, tokens: [e.p, e.c, e.reasoning, e.cached] };
      }),
    );
    expect(json.data.map((d: any) => d.model)).toEqual(expect.arrayContaining(['console/chat', 'console/other', 'console/image']));
    // Two decimals, as every account route shows money: the image's 0.08 shows.
    const image = json.data.filter((d: any) => d.model === 'console/image');
    expect(image.reduce((sum: number, d: any) => sum + d.usage, 0)).toBe(0.08);
    // One day, named: the same figures as that day of the window.
    const day = records[0].created_at.slice(0, 10);
    expect((await get(`/v1/activity?date=${day}`, a.key)).json.data).toEqual(json.data.filter((d: any) => d.date === day));
    // The other account's day holds its one call only.
    expect((await get('/v1/activity', b.key)).json.data).toEqual([expect.objectContaining({ model: 'console/chat', requests: 1 })]);
  });

  it('the admin API lists, searches and shows accounts with their keys, a revoked one included', async () => {
    const extra = (await gw.admin('POST', `/admin/v1/accounts/${a.accountId}/keys`, { label: 'to revoke', limit: 1 })).json.data;
    expect((await gw.admin('DELETE', `/admin/v1/keys/${extra.key_id}`)).status).toBe(204);

    const list: any[] = [];
    let cursor: string | null = null;
    do {
      const r = await gw.admin('GET', `/admin/v1/accounts?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      list.push(...r.json.data);
      cursor = r.json.next_cursor;
    } while (cursor && list.length < 50);
    expect(new Set(list.map((r) => r.account_id)).size).toBe(list.length);
    expect(list.map((r) => r.account_id)).toEqual(expect.arrayContaining([a.accountId, b.accountId]));

    const search = async (q: string) => (await gw.admin('GET', `/admin/v1/accounts?search=${encodeURIComponent(q)}`)).json.data;
    expect((await search(b.accountId)).map((r: any) => r.account_id)).toEqual([b.accountId]);
    expect((await search(label.toUpperCase())).map((r: any) => r.account_id)).toEqual([b.accountId]);
    expect((await search(extra.key_id.slice(0, 10))).map((r: any) => r.account_id)).toEqual([a.accountId]);

    const { status, json } = await gw.admin('GET', `/admin/v1/accounts/${a.accountId}`);
    expect(status).toBe(200);
    const credits = (await get('/v1/credits', a.key)).json.data;
    expect(json.data).toMatchObject({
      account_id: a.accountId,
      suspended: false,
      credits: credits.total_credits,
      usage: credits.total_usage,
      held: 0,
      available: credits.available,
      rate_limit: { requests: expect.any(Number), interval: expect.any(String) },
      job_concurrency: expect.any(Number),
    });
    const [{ usage }] = await gw.ledger(`SELECT total_usage::text AS usage FROM accounts WHERE id = $1`, [a.accountId]);
    expect(nano(json.data.usage_exact)).toBe(BigInt(usage));
    expect(json.data.keys).toEqual([
      expect.objectContaining({ key_id: extra.key_id, label: 'to revoke', limit: 1, revoked: true }),
      expect.objectContaining({ key_id: a.keyId, revoked: false, expires_at: null, usage: credits.total_usage }),
    ]);
    expect(JSON.stringify(json)).not.toMatch(/sk_live_|whsec_|hash/);
    expect(JSON.stringify(json)).not.toContain(a.key);

    const missing = await gw.admin('GET', '/admin/v1/accounts/acct_unknown');
    expect(missing.status).toBe(404);
    expect(missing.json.error).toMatchObject({ code: 'model_unavailable', request_id: expect.any(String) });
  });

  it('refuses the admin routes without the admin token, and an account key is no admin token', async () => {
    for (const path of ['/admin/v1/accounts', `/admin/v1/accounts/${a.accountId}`]) {
      const tries: Record<string, string>[] = [{}, { authorization: 'Bearer wrong-admin-token' }, { authorization: `Bearer ${a.key}` }];
      for (const headers of tries) {
        const r = await fetch(`${gw.url}${path}`, { headers });
        const body = await r.json();
        expect({ path, status: r.status, code: body.error?.code }).toEqual({ path, status: 401, code: 'invalid_api_key' });
      }
    }
    expect((await fetch(`${gw.url}/v1/generations`)).status).toBe(401);
    expect((await fetch(`${gw.url}/v1/activity`)).status).toBe(401);
  });

  it('answers a bad query with 400 invalid_request in the envelope, and nothing else changes', async () => {
    const before = await gw.ledger(`SELECT count(*)::int AS n FROM usage_records`);
    const bad: Array<[string, () => Promise<{ status: number; json: any }>]> = [
      ['days=0', () => get('/v1/activity?days=0', a.key)],
      ['days=91', () => get('/v1/activity?days=91', a.key)],
      ['days=x', () => get('/v1/activity?days=x', a.key)],
      ['date=2026-02-30', () => get('/v1/activity?date=2026-02-30', a.key)],
      ['date=yesterday', () => get('/v1/activity?date=yesterday', a.key)],
      ['generations limit=0', () => get('/v1/generations?limit=0', a.key)],
      ['generations limit=201', () => get('/v1/generations?limit=201', a.key)],
      ['generations cursor', () => get('/v1/generations?cursor=forged', a.key)],
      ['accounts limit=abc', () => gw.admin('GET', '/admin/v1/accounts?limit=abc')],
      ['accounts cursor', () => gw.admin('GET', '/admin/v1/accounts?cursor=forged')],
    ];
    for (const [what, ask] of bad) {
      const r = await ask();
      expect({ what, status: r.status, code: r.json.error?.code, message: typeof r.json.error?.message }).toEqual({
        what,
        status: 400,
        code: 'invalid_request',
        message: 'string',
      });
      expect(r.json.error.request_id).toMatch(/^req_/);
    }
    expect(await gw.ledger(`SELECT count(*)::int AS n FROM usage_records`)).toEqual(before);
  });
});
