import { describeOnEngines } from '@gateway/db/testing';
import { EVENT_TYPES, TOPICS } from '@gateway/events';
import { waitFor } from '@gateway/testing';
import { initialize, type McpUnderTest, openSession, openStream, post, startMcp } from './testing/service';

/** What a session may make the service hold (issue 31, item 6), on both engines the service runs on. */
describeOnEngines('mcp sessions are bounded', (engine) => {
  let m: McpUnderTest;
  beforeAll(async () => {
    m = await startMcp(engine, { sessionsPerAccount: 3, streamsPerAccount: 2, sessionIdleTtlMs: 30 * 60_000 });
  }, 60_000);
  afterAll(() => m?.close());

  const clientInfoBytes = async (session: string) =>
    (await m.db.query<{ n: number }>(`SELECT octet_length(client_info::text) AS n FROM sessions WHERE id = $1`, [session]))[0].n;
  const sessionCount = async () => (await m.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM sessions`))[0].n;

  it('initialize refuses an over-long clientInfo field (400) and stores nothing for it', async () => {
    const before = await sessionCount();
    const r = await post(m, m.as('acct_info'), initialize({ name: 'x'.repeat(100_000), version: '1' }));
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'invalid_request' });
    expect(r.json.error.message).toContain('clientInfo.name');
    expect(await sessionCount()).toBe(before);
  });

  it('initialize stores only the bounded fields of clientInfo: a megabyte beside them does not reach the database', async () => {
    const r = await post(m, m.as('acct_info'), initialize({ name: 'agent', version: '2', title: 'Agent', junk: 'x'.repeat(1_000_000) }));
    expect(r.status).toBe(200);
    const session = r.headers.get('mcp-session-id') as string;
    const [row] = await m.db.query<{ client_info: unknown }>(`SELECT client_info FROM sessions WHERE id = $1`, [session]);
    const stored = typeof row.client_info === 'string' ? JSON.parse(row.client_info) : row.client_info;
    expect(stored).toEqual({ name: 'agent', version: '2', title: 'Agent' });
    expect(await clientInfoBytes(session)).toBeLessThan(1_000);
  });

  it('a session idle past the TTL is gone (404), and the sweep deletes it with its queued messages', async () => {
    const headers = m.as('acct_idle');
    const session = await openSession(m, headers);
    await m.db.query(`INSERT INTO session_events (session_id, dedupe_key, message) VALUES ($1, 'k', '{}')`, [session]);
    expect((await post(m, headers, { jsonrpc: '2.0', id: 2, method: 'ping' }, session)).status).toBe(200);
    // 31 minutes unused, past the 30 of this service.
    await m.db.query(`UPDATE sessions SET last_seen_at = now() - interval '31 minutes' WHERE id = $1`, [session]);
    const late = await post(m, headers, { jsonrpc: '2.0', id: 3, method: 'ping' }, session);
    expect(late.status).toBe(404);
    expect(late.json.error.code).toBe(-32600);
    await m.service.sessions.sweep();
    expect(await m.db.query(`SELECT 1 FROM sessions WHERE id = $1`, [session])).toHaveLength(0);
    expect(await m.db.query(`SELECT 1 FROM session_events WHERE session_id = $1`, [session])).toHaveLength(0);
  });

  it('an account holds at most sessions_per_account live sessions: the next initialize is 429, another account is unaffected', async () => {
    const headers = m.as('acct_many');
    const sessions = [await openSession(m, headers), await openSession(m, headers), await openSession(m, headers)];
    const over = await post(m, headers, initialize());
    expect(over.status).toBe(429);
    expect(over.json.error).toMatchObject({ code: 'rate_limited' });
    expect(over.headers.get('x-gateway-limit-type')).toBe('concurrency');
    expect(over.headers.get('retry-after')).toBeTruthy();
    expect((await post(m, m.as('acct_other'), initialize())).status).toBe(200);
    // Ending one frees its place.
    const del = await fetch(m.url, { method: 'DELETE', headers: { ...headers, 'mcp-session-id': sessions[0] } });
    expect(del.status).toBe(204);
    expect((await post(m, headers, initialize())).status).toBe(200);
  });

  it('concurrent initializes cannot pass the cap together', async () => {
    const headers = m.as('acct_race');
    const results = await Promise.all(Array.from({ length: 8 }, () => post(m, headers, initialize())));
    expect(results.filter((r) => r.status === 200)).toHaveLength(3);
    expect(results.filter((r) => r.status === 429)).toHaveLength(5);
  });

  it('an account holds at most streams_per_account open streams: the next GET is 429 before any stream opens', async () => {
    const headers = m.as('acct_streams');
    const [a, b] = [await openSession(m, headers), await openSession(m, headers)];
    const first = await openStream(m, headers, a);
    const second = await openStream(m, headers, b);
    const third = await openStream(m, headers, a);
    expect([first.status, second.status, third.status]).toEqual([200, 200, 429]);
    expect(third.body.error).toMatchObject({ code: 'rate_limited' });
    await first.close();
    await waitFor(() => m.service.hub.size === 1, 'the closed stream to leave the hub');
    const again = await openStream(m, headers, a);
    expect(again.status).toBe(200);
    await Promise.all([second.close(), again.close()]);
  });

  it('logging/setLevel filters what the session is sent: at "error", a job that succeeded (info) is not, one that failed is', async () => {
    const headers = m.as('acct_level');
    const session = await openSession(m, headers);
    const set = await post(m, headers, { jsonrpc: '2.0', id: 4, method: 'logging/setLevel', params: { level: 'error' } }, session);
    expect(set.json).toEqual({ jsonrpc: '2.0', id: 4, result: {} });
    const bad = await post(m, headers, { jsonrpc: '2.0', id: 5, method: 'logging/setLevel', params: { level: 'loud' } }, session);
    expect(bad.json.error.code).toBe(-32602);
    const stream = await openStream(m, headers, session);
    for (const [job, status] of [
      ['job_ok', 'succeeded'],
      ['job_bad', 'failed'],
    ] as const) {
      await m.service.sessions.linkJob(session, 'acct_level', job);
      await m.bus.publish(TOPICS.jobs, {
        id: `${job}:${status}`,
        type: EVENT_TYPES.jobState,
        key: job,
        data: {
          job_id: job,
          account_id: 'acct_level',
          model: 'm/v',
          category: 'video',
          status,
          gateway_request_id: 'req_x',
          error_code: null,
          at: new Date().toISOString(),
        },
      });
    }
    const [first] = await stream.until(1);
    expect(first).toMatchObject({ method: 'notifications/message', params: { level: 'error', data: { job_id: 'job_bad' } } });
    // The info one was never queued: nothing else is waiting for the stream.
    expect(await m.db.query(`SELECT dedupe_key FROM session_events WHERE session_id = $1`, [session])).toEqual([
      { dedupe_key: 'job:job_bad:failed' },
    ]);
    await stream.close();
  });
});

describeOnEngines('mcp sessions with an open stream stay in use', (engine) => {
  let m: McpUnderTest;
  beforeAll(async () => {
    // A TTL of seconds (the config's least is a minute), so the test sees a session expire; streams are touched every 750 ms.
    m = await startMcp(engine, { sessionIdleTtlMs: 3_000 }, { pollMs: 50 });
  }, 60_000);
  afterAll(() => m?.close());

  it('the idle session expires and is swept; the one whose stream stayed open is kept and still answers', async () => {
    const headers = m.as('acct_kept');
    const [idle, streamed] = [await openSession(m, headers), await openSession(m, headers)];
    const stream = await openStream(m, headers, streamed);
    // Asked of the database, not by a call: a call would touch the session and keep it alive. A row the process's
    // own sweeper already removed has expired too.
    const idleFor = async (id: string) =>
      (await m.db.query<{ ms: number }>(`SELECT (extract(epoch FROM now() - last_seen_at) * 1000)::int AS ms FROM sessions WHERE id = $1`, [id]))[0]
        ?.ms ?? Number.POSITIVE_INFINITY;
    await waitFor(async () => (await idleFor(idle)) > 3_000, 'the idle session to pass its TTL', 20_000);
    expect((await post(m, headers, { jsonrpc: '2.0', id: 2, method: 'ping' }, idle)).status).toBe(404);
    await m.service.sessions.sweep();
    expect((await m.db.query<{ id: string }>(`SELECT id FROM sessions WHERE account_id = 'acct_kept'`)).map((r) => r.id)).toEqual([streamed]);
    expect(stream.ended).toBe(false);
    expect((await post(m, headers, { jsonrpc: '2.0', id: 3, method: 'ping' }, streamed)).status).toBe(200);
    await stream.close();
  }, 30_000);
});

describeOnEngines('mcp streams share one poller per process', (engine) => {
  const STREAMS = 30;
  let m: McpUnderTest;
  let other: McpUnderTest;
  beforeAll(async () => {
    m = await startMcp(engine, { sessionsPerAccount: STREAMS, streamsPerAccount: STREAMS }, { pollMs: 50 });
    other = await m.replica();
  }, 60_000);
  afterAll(async () => {
    await other?.close();
    await m?.close();
  });

  it(`${STREAMS} idle streams over ten poll intervals ask the database fewer times than there are streams`, async () => {
    const headers = m.as('acct_poll');
    const sessions: string[] = [];
    for (let i = 0; i < STREAMS; i++) sessions.push(await openSession(m, headers));
    const streams = await Promise.all(sessions.map((s) => openStream(m, headers, s)));
    expect(streams.every((s) => s.status === 200)).toBe(true);
    // Each stream polling on its own asked twice per interval: 600 queries here; one poller asks about once per interval.
    const before = m.db.queries;
    await new Promise((resolve) => setTimeout(resolve, 10 * 50));
    expect(m.db.queries - before).toBeLessThan(STREAMS);

    // A message another replica queued (no wake reaches this process) arrives through the shared poller.
    await other.service.sessions.enqueue(
      sessions[7],
      'k1',
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hi' } },
      1,
    );
    expect(await streams[7].until(1)).toEqual([{ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hi' } }]);

    // A session ended on the other replica closes its stream here.
    const del = await fetch(other.url, { method: 'DELETE', headers: { ...headers, 'mcp-session-id': sessions[3] } });
    expect(del.status).toBe(204);
    await streams[3].until(Number.POSITIVE_INFINITY);
    expect(streams[3].ended).toBe(true);
    await Promise.all(streams.map((s) => s.close()));
  });
});
