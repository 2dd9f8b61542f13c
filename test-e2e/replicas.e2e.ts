import { Pool } from 'pg';
import { type HttpsReceiver, requireTrustedTestCert, startHttpsReceiver, waitFor } from '@gateway/testing';
import { type FakeFal, startFakeFal } from './support/fake-fal';
import { type TestGateway, settled, useGatewaySuite } from './support/harness';
import { FAL_KEY_ENV, jobsConfig } from './support/jobs';

/**
 * Issue 40: the fleet with two processes of every service (`pnpm fleet --replicas 2`), the edges behind the fleet's
 * balancer and each service's callers balancing over its replicas. What must hold whichever replica takes a call:
 * a key's rate limit and spend cap, an Idempotency-Key, a job run once, a webhook per state under one id, an MCP
 * session's stream, stats and status probes counted once. Every test ends with MONEY.md's invariants
 * (useGatewaySuite). Calls name an edge replica each (gw.fleet.edgeUrls), so both edges take part by construction.
 */
const config = (falUrl: string) => ({
  ...jobsConfig(falUrl, { webhooks: { initial_backoff_ms: 200, max_retries: 2 } }),
  status: { sample_interval: '1s' },
  stats: { cache_ttl: '1s' },
});

const chatBody = (content: string, extra: Record<string, unknown> = {}) => ({
  model: 'test/chat',
  messages: [{ role: 'user', content }],
  max_tokens: 5,
  ...extra,
});

describe('two replicas of every service', () => {
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let fal: FakeFal;
  let receiver: HttpsReceiver;
  let edges: string[];

  beforeAll(() => requireTrustedTestCert());

  useGatewaySuite(
    'fleet',
    {
      upstreams: async () => {
        const f = await startFakeFal();
        process.env[FAL_KEY_ENV] = f.key;
        return [f, await startHttpsReceiver()] as [FakeFal, HttpsReceiver];
      },
      config: ([f]) => config(f.url),
      credits: 50,
      fleet: { replicas: 2 },
    },
    (s) => {
      ({ gw, acct } = s);
      [fal, receiver] = s.upstreams;
      edges = gw.fleet!.edgeUrls;
    },
  );

  const post = (edge: string, path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${edge}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  const chat = async (edge: string, key: string, body: unknown, headers: Record<string, string> = {}) => {
    const r = await post(edge, '/v1/chat/completions', key, body, headers);
    return { status: r.status, headers: r.headers, text: await r.text() };
  };
  /** The upstream attempts each text replica made: both must have served. */
  const textAttempts = async () =>
    Promise.all(
      ['text', 'text-2'].map(async (name) => {
        const m = await (await fetch(`${gw.fleet!.metricsUrls[name]}/metrics`)).text();
        return [...m.matchAll(/^gateway_upstream_attempts_total\{[^}]*\} (\d+)/gm)].reduce((n, x) => n + Number(x[1]), 0);
      }),
    );

  it('runs two processes of each service, and the calls of both edges, streamed or not, reach both text replicas', async () => {
    expect(gw.fleet!.replicas).toEqual({ edge: 2, billing: 2, text: 2, media: 2, jobs: 2, catalogue: 2, mcp: 2 });
    expect(gw.fleet!.addresses.text.split(',')).toHaveLength(2);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => chat(edges[i % 2], acct.key, chatBody(`spread ${i}`, { stream: i % 4 === 3 }))),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    // Through the balancer in front of the edges too, as a client of `pnpm fleet` calls.
    expect((await chat(gw.url, acct.key, chatBody('front'))).status).toBe(200);
    const [a, b] = await textAttempts();
    expect({ first: a > 0, second: b > 0, total: a + b }).toEqual({ first: true, second: true, total: 9 });
  });

  it("meters a key's rate limit exactly across edges: of 10 calls at once on two edges, exactly the limit pass", async () => {
    const limited = await gw.account(5, { rate_limit: { requests: 6, interval: '60s' } });
    const statuses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => chat(edges[i % 2], limited.key, chatBody(`rl ${i}`)).then((a) => a.status)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(6);
    expect(statuses.filter((s) => s === 429)).toHaveLength(4);
  });

  it("holds a key's spend cap exactly across edges and billing replicas: never more held and spent than the cap", async () => {
    // Each call holds its worst case; a cap of a few of them lets some through and refuses the rest with 402.
    const capped = await gw.account(5, { keyLimit: 0.05 });
    const statuses = await Promise.all(
      Array.from({ length: 16 }, (_, i) => chat(edges[i % 2], capped.key, chatBody(`cap ${i}`, { max_tokens: 10 })).then((a) => a.status)),
    );
    expect(statuses.every((s) => s === 200 || s === 402)).toBe(true);
    expect(statuses.filter((s) => s === 402).length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);
    await settled(gw, capped.accountId);
    const [k] = await gw.ledger(`SELECT usage::text AS usage, spend_limit::text AS cap FROM api_keys WHERE id = $1`, [capped.keyId]);
    expect(BigInt(k.usage) <= BigInt(k.cap)).toBe(true);
  });

  it('honours an Idempotency-Key whichever edge (and text and billing replica) takes the retry: one charge, the same answer', async () => {
    const who = await gw.account(5);
    const first = await chat(edges[0], who.key, chatBody('idem across replicas'), { 'idempotency-key': 'idem-x' });
    expect(first.status).toBe(200);
    await settled(gw, who.accountId);
    const again = await Promise.all(
      [edges[1], edges[0], edges[1]].map((e) => chat(e, who.key, chatBody('idem across replicas'), { 'idempotency-key': 'idem-x' })),
    );
    for (const a of again) {
      expect({ status: a.status, text: a.text, replayed: a.headers.get('idempotent-replayed') }).toEqual({
        status: 200,
        text: first.text,
        replayed: 'true',
      });
    }
    await settled(gw, who.accountId);
    const [h] = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [who.accountId]);
    const [u] = await gw.ledger(`SELECT count(*)::int AS n FROM usage_records WHERE account_id = $1`, [who.accountId]);
    expect({ holds: h.n, records: u.n }).toEqual({ holds: 1, records: 1 });
  });

  it('runs each job once whichever jobs replica takes it, and delivers its webhook once under one id', async () => {
    const who = await gw.account(5);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await post(edges[i % 2], '/v1/videos', who.key, {
        model: 'test/video',
        prompt: `replica job ${i}`,
        duration: 1,
        webhook_url: `${receiver.url}/replicas/${i}`,
      });
      expect(r.status).toBe(202);
      ids.push(((await r.json()) as { request_id: string }).request_id);
    }
    const deliveries = (i: number) => receiver.received.filter((d) => d.url === `/replicas/${i}`);
    await waitFor(() => ids.every((_, i) => deliveries(i).length > 0), 'a webhook for every job', 30_000);
    await settled(gw, who.accountId);
    // A moment for a second delivery, were one coming: the retry backoff is 200 ms.
    await new Promise((r) => setTimeout(r, 1_000));
    for (const [i, id] of ids.entries()) {
      const got = deliveries(i);
      expect({ id, deliveries: got.length, ids: new Set(got.map((d) => d.headers['x-gateway-webhook-id'])).size }).toEqual({
        id,
        deliveries: 1,
        ids: 1,
      });
      expect(JSON.parse(got[0].body.toString())).toMatchObject({ request_id: id, status: 'COMPLETED', outcome: 'succeeded' });
      expect([...fal.jobs.values()].filter((j) => j.input.prompt === `replica job ${i}`)).toHaveLength(1);
    }
    const holds = await gw.ledger(`SELECT state, count(*)::int AS n FROM holds WHERE account_id = $1 GROUP BY state`, [who.accountId]);
    expect(holds).toEqual([{ state: 'settled', n: 4 }]);
  });

  it("streams an MCP session's notification on the replica that holds its stream, another than the one that took the call", async () => {
    const who = await gw.account(5);
    // One edge's calls to the mcp service alternate over its two replicas (round-robin): the stream's GET goes to the
    // other replica than the initialize before it and the tool call after it.
    const rpc = async (body: unknown, session?: string) => {
      const r = await post(edges[0], '/v1/mcp', who.key, body, {
        accept: 'application/json, text/event-stream',
        ...(session ? { 'mcp-session-id': session } : {}),
      });
      return { status: r.status, session: r.headers.get('mcp-session-id'), json: (await r.json()) as any };
    };
    const init = await rpc({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'replicas', version: '1' } },
    });
    expect(init.status).toBe(200);
    const session = init.session as string;
    const stream = await fetch(`${edges[0]}/v1/mcp`, {
      headers: { authorization: `Bearer ${who.key}`, 'mcp-session-id': session, accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let seen = '';
    const decoder = new TextDecoder();
    const call = await rpc(
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'submit_job', arguments: { model: 'test/video', input: { prompt: 'mcp replica', duration: 1 } } },
      },
      session,
    );
    expect(call.status).toBe(200);
    const jobId = call.json.result.structuredContent.request_id as string;
    const deadline = Date.now() + 30_000;
    while (!seen.includes(jobId) && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += decoder.decode(value, { stream: true });
    }
    await reader.cancel();
    const event = seen.split('\n').find((l) => l.startsWith('data:') && l.includes(jobId));
    expect(JSON.parse((event ?? 'data: {}').slice(5))).toMatchObject({
      method: 'notifications/message',
      params: { data: { job_id: jobId, outcome: 'succeeded' } },
    });
    await settled(gw, who.accountId);
  });

  it('counts stats once (each usage event by one catalogue replica) and each status probe once although both monitor', async () => {
    const get = async (p: string) => (await (await fetch(`${gw.url}${p}`)).json()) as any;
    const before = await get('/v1/stats');
    const who = await gw.account(5);
    let used = 0;
    for (let i = 0; i < 4; i++) {
      const a = await chat(edges[i % 2], who.key, chatBody(`stats ${i}`));
      const usage = JSON.parse(a.text).usage;
      used += usage.prompt_tokens + usage.completion_tokens;
    }
    await waitFor(async () => (await get('/v1/stats')).tokens >= before.tokens + used, 'the usage to be counted', 20_000);
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await get('/v1/stats')).tokens).toBe(before.tokens + used);
    // Both catalogue replicas sample every second: each component's day counts one sample per slot, not two.
    const catalogueDb = new Pool({ connectionString: gw.fleet!.databaseUrl, max: 1, options: '-c search_path=catalogue' });
    try {
      await waitFor(async () => (await catalogueDb.query(`SELECT count(*)::int AS n FROM status_samples`)).rows[0].n >= 12, 'samples', 20_000);
      // One statement, one snapshot: the monitors go on sampling, and two reads could fall either side of a sample.
      const counts = (
        await catalogueDb.query(
          `SELECT component, d.n AS days, s.n AS samples
             FROM (SELECT component, sum(samples)::int AS n FROM status_days GROUP BY component) d
             FULL JOIN (SELECT component, count(*)::int AS n FROM status_samples GROUP BY component) s USING (component)
            ORDER BY component`,
        )
      ).rows;
      expect(counts.length).toBeGreaterThan(0);
      expect(counts.filter((c) => c.days !== c.samples)).toEqual([]);
    } finally {
      await catalogueDb.end();
    }
  });
});
