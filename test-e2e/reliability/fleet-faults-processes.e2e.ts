import { Client } from 'pg';
import { waitFor, KAFKA_BROKERS } from '@gateway/testing';
import { TEXT_PRICE } from '../support/config';
import { type FakeFal, startFakeFal } from '../support/fake-fal';
import { EVENTS_FLEET, PG_URL, expectLedgerInvariants, settled } from '../support/harness';
import { FAL_KEY_ENV, HOLD, falJobOf, jobsClient, jobsConfig, release, startRunning, VIDEO_RATE } from '../support/jobs';
import { nano, textCost } from '../support/money';
import { type ChatOutcome as Outcome, chatOnce } from './support/chat-load';
import { busView } from './support/bus-view';
import { type FaultFleet, type GatedUpstream, gatedConfig, startFaultFleet, startGatedUpstream } from './support/private-engines';

/**
 * Reliability, item 1 (fleet): a service process SIGKILLed while money is in flight. One fleet on the machine's
 * PostgreSQL and Redis (nothing here stops them), its events on Redis Streams and, where a broker runs (always in CI),
 * again on Kafka; every test ends with MONEY.md's invariants.
 */

/** Every call of the gated upstream: 3 prompt and 1 completion tokens at the e2e catalogue's price, 0.005 USD. */
const PER_CALL = textCost(TEXT_PRICE, 3, 1);
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

function config(upstreamUrl: string, falUrl: string) {
  const jobs = jobsConfig(falUrl, { jobs: { lease: '2s', poll_interval: '50ms' } });
  const gated = gatedConfig(upstreamUrl, ['ok', 'gated', 'gated-late', 'stall', 'drip']);
  return {
    ...jobs,
    ...gated,
    providers: [...jobs.providers, ...gated.providers],
    models: [...jobs.models.filter((m) => m.id === 'test/video'), ...gated.models],
  };
}

/** Both buses: what a killed consumer leaves behind differs (Redis: pending entries claimed; Kafka: a rebalance). */
const buses = ['redis', ...(EVENTS_FLEET === 'fleet-kafka' ? ['kafka'] : [])] as const;

describe.each(buses)('fleet on %s: a service SIGKILLed with money in flight', (bus) => {
  let upstream: GatedUpstream;
  let fal: FakeFal;
  let f: FaultFleet;

  beforeAll(async () => {
    upstream = await startGatedUpstream();
    fal = await startFakeFal();
    f = await startFaultFleet(
      config(upstream.url, fal.url),
      { postgresUrl: PG_URL, redisUrl: REDIS_URL, ...(bus === 'kafka' ? { kafkaBrokers: KAFKA_BROKERS.join(',') } : {}) },
      { [FAL_KEY_ENV]: fal.key },
    );
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
    await upstream?.close();
    await fal?.close();
  });

  const chat = (key: string, model: string, opts: { stream?: boolean; onBody?: (soFar: string) => void } = {}) => chatOnce(f.url, key, model, opts);

  const openHolds = async (accountId: string) =>
    (await f.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1 AND state = 'open'`, [accountId]))[0].n as number;

  /**
   * Sync holds live 15 minutes (PaidCall's TTL; no setting shortens it). A test cannot wait that long, so it moves
   * the expiry of the holds nobody can close any more into the past, as those 15 minutes would, and lets billing's
   * sweeper (every 5 s) release them.
   */
  async function expireAndSweep(holdIds: string[]): Promise<void> {
    if (holdIds.length === 0) return;
    await f.ledger(`UPDATE holds SET expires_at = now() - interval '1 second' WHERE id = ANY($1) AND state = 'open'`, [holdIds]);
    await waitFor(
      async () => (await f.ledger(`SELECT count(*)::int AS n FROM holds WHERE id = ANY($1) AND state = 'open'`, [holdIds]))[0].n === 0,
      'the sweeper to release the expired holds',
      30_000,
    );
  }

  it('text SIGKILLed between hold and settle: the callers get an error, the holds are released at expiry (never charged, never left open), and a restarted text serves', async () => {
    const acct = await f.account(5);
    const streamed = 3;
    const plain = 3;
    const delivered = new Set<number>();
    const calls = [
      ...Array.from({ length: streamed }, (_, i) =>
        chat(acct.key, 'test/stall', { stream: true, onBody: (soFar) => soFar.includes('"po"') && delivered.add(i) }),
      ),
      ...Array.from({ length: plain }, () => chat(acct.key, 'test/stall')),
    ];
    // Every call holds its worst case and waits on the upstream; the streamed ones have their first words.
    await waitFor(async () => upstream.waiting() === streamed + plain && delivered.size === streamed, 'every call to be in flight', 30_000);
    expect(await openHolds(acct.accountId)).toBe(streamed + plain);
    const holds = await f.ledger<{ id: string; amount: string; ttl_ms: string }>(
      `SELECT id, amount::text AS amount, (extract(epoch FROM expires_at - created_at) * 1000)::bigint::text AS ttl_ms FROM holds WHERE account_id = $1`,
      [acct.accountId],
    );
    for (const h of holds) expect(Number(h.ttl_ms)).toBeLessThanOrEqual(15 * 60_000);

    await f.kill('text');
    const outcomes = await Promise.all(calls);
    // The upstream saw the gateway hang up: nothing waits there any more.
    await waitFor(() => upstream.waiting() === 0, 'the upstream calls to be hung up');
    // Streamed: 200 and "po" were sent; the stream then broke, without its end or any usage.
    for (const o of outcomes.slice(0, streamed)) {
      expect(o.status).toBe(200);
      expect(o.body).toContain('"po"');
      expect(o.body).not.toContain('[DONE]');
      expect(o.body).not.toContain('"usage"');
    }
    // Not streamed: the edge answers the contract's envelope for a service it lost (or the connection breaks).
    for (const o of outcomes.slice(streamed)) {
      if (o.broken) expect(o.status === 0 || o.status === 503).toBe(true);
      else expect({ status: o.status, code: JSON.parse(o.body).error?.code }).toEqual({ status: 503, code: 'upstream_unavailable' });
    }
    // Nobody is left to close these holds: they stay open, charging nothing, until their expiry...
    expect(await openHolds(acct.accountId)).toBe(streamed + plain);
    // ...and a call while text is down is refused before any hold.
    const down = await chat(acct.key, 'test/ok');
    expect({ status: down.status, code: JSON.parse(down.body).error?.code }).toEqual({ status: 503, code: 'upstream_unavailable' });
    expect((await f.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId]))[0].n).toBe(streamed + plain);

    await expireAndSweep(holds.map((h) => h.id));
    const closed = await f.ledger(
      `SELECT h.state, h.charge::text AS charge, u.error_code, u.total_cost::text AS cost FROM holds h JOIN usage_records u ON u.hold_id = h.id WHERE h.account_id = $1`,
      [acct.accountId],
    );
    expect(closed).toEqual(
      Array.from({ length: streamed + plain }, () => ({ state: 'expired', charge: '0', error_code: 'hold_expired', cost: '0' })),
    );
    const [account] = await f.ledger(`SELECT held::text AS held, total_usage::text AS usage FROM accounts WHERE id = $1`, [acct.accountId]);
    expect(account).toEqual({ held: '0', usage: '0' });

    // A supervisor's restart: the next call is served and charged exactly.
    await f.fleet.restart('text');
    const next = await chat(acct.key, 'test/ok');
    expect(next.status).toBe(200);
    expect(JSON.parse(next.body).usage.cost).toBe('0.005');
    await settled(f, acct.accountId, 15_000);
    const [after] = await f.ledger(`SELECT total_usage::text AS usage FROM accounts WHERE id = $1`, [acct.accountId]);
    expect(after.usage).toBe(PER_CALL.toString());
    await expectLedgerInvariants(f);
  }, 120_000);

  it('text SIGKILLed in a long stream: the hold, expired, is charged what the stream had delivered at its last checkpoint', async () => {
    const acct = await f.account(5);
    let started = 0;
    const call = chat(acct.key, 'test/drip', { stream: true, onBody: () => void (started ||= Date.now()) });
    // Past its first checkpoint (5 s of streaming): billing keeps the stream's delivered-so-far beside its hold.
    await waitFor(async () => started > 0 && Date.now() - started > 6_000, 'the stream to run past its first checkpoint', 30_000);
    const checkpoints = async () =>
      (
        await f.ledger(`SELECT count(*)::int AS n FROM hold_checkpoints c JOIN holds h ON h.id = c.hold_id WHERE h.account_id = $1`, [acct.accountId])
      )[0].n as number;
    await waitFor(async () => (await checkpoints()) === 1, 'billing to keep the checkpoint', 15_000);
    await f.kill('text');
    try {
      expect(await call).toMatchObject({ status: 200, broken: true });
      const [hold] = await f.ledger<{ id: string; amount: string }>(`SELECT id, amount::text AS amount FROM holds WHERE account_id = $1`, [
        acct.accountId,
      ]);
      await expireAndSweep([hold.id]);
      const [closed] = await f.ledger(
        `SELECT h.state, h.charge::text AS charge, h.closed_at IS NOT NULL AS closed, u.status, u.error_code, u.tokens_prompt,
                u.tokens_completion, u.total_cost::text AS cost FROM holds h JOIN usage_records u ON u.hold_id = h.id WHERE h.account_id = $1`,
        [acct.accountId],
      );
      // Charged as a stream broken at the checkpoint, the prompt and the tokens delivered by then, as its record says;
      // never above the hold (max_tokens 5 reserved less than the stream had delivered by then).
      const delivered = textCost(TEXT_PRICE, closed.tokens_prompt, closed.tokens_completion);
      const charge = (delivered < BigInt(hold.amount) ? delivered : BigInt(hold.amount)).toString();
      expect(closed).toMatchObject({ state: 'expired', closed: true, status: 'failed', error_code: 'hold_expired', charge, cost: charge });
      expect(closed.tokens_completion).toBeGreaterThan(1);
      const [account] = await f.ledger(`SELECT held::text AS held, total_usage::text AS usage FROM accounts WHERE id = $1`, [acct.accountId]);
      expect(account).toEqual({ held: '0', usage: charge });
    } finally {
      // Whatever this test saw, the next one needs a text process.
      await f.fleet.restart('text');
    }
    await expectLedgerInvariants(f);
  }, 60_000);

  it('billing SIGKILLed mid-settle under load: after its restart every settle is applied exactly once, every 200 charged, none twice', async () => {
    const acct = await f.account(20);
    const results: Outcome[] = [];
    upstream.shut();
    // One call whose settle billing is applying when it dies, and calls that settle while billing is dead.
    const caught = chat(acct.key, 'test/gated').then((o) => (results.push(o), o));
    await waitFor(async () => upstream.waiting('gated') === 1, 'the call to be caught to be in flight', 30_000);
    const [caughtHold] = await f.ledger<{ id: string }>(`SELECT id FROM holds WHERE account_id = $1 AND state = 'open'`, [acct.accountId]);
    const lateCount = 8;
    const late = Array.from({ length: lateCount }, () => chat(acct.key, 'test/gated-late').then((o) => (results.push(o), o)));
    await waitFor(async () => upstream.waiting('gated-late') === lateCount, 'the late calls to be in flight', 30_000);

    // Load: calls answered at once, so settles stream onto the bus and billing is applying them when it dies.
    let loading = true;
    const loaders = Array.from({ length: 6 }, async () => {
      while (loading) {
        const o = await chat(acct.key, 'test/ok');
        results.push(o);
        // A refused call (billing away) is tried again after a breath, not in a tight loop.
        if (o.status !== 200) await new Promise((r) => setTimeout(r, 50));
      }
    });
    const applied = async () =>
      (await f.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1 AND state = 'settled'`, [acct.accountId]))[0].n as number;
    await waitFor(async () => (await applied()) >= 30, 'billing to be applying a stream of settles', 60_000);

    // Mid-settle, for certain: the caught call's hold row is locked, so billing's close_hold of it waits on the lock
    // (and every settle behind it on the stream waits too) when billing is killed.
    const lock = new Client({ connectionString: f.databaseUrl });
    await lock.connect();
    let appliedAtKill: number;
    try {
      const lockPid = (await lock.query<{ p: number }>('SELECT pg_backend_pid() AS p')).rows[0].p;
      await lock.query('BEGIN');
      await lock.query('SELECT id FROM billing.holds WHERE id = $1 FOR UPDATE', [caughtHold.id]);
      upstream.open('gated');
      expect((await caught).status).toBe(200);
      // Read from another connection: inside the lock's transaction, pg_stat_activity is the snapshot of its first
      // read and never shows a wait that began after it. Blocked by the lock itself, not merely waiting on some
      // lock: the places and closes of the same key queue behind billing's blocked statement, which holds the key.
      const activity = (where: string) =>
        f.ledger<{ pid: number; wait: string | null; blocked_by: number[]; query: string }>(
          `SELECT pid, wait_event_type || ':' || wait_event AS wait, pg_blocking_pids(pid) AS blocked_by, left(query, 100) AS query
             FROM pg_stat_activity WHERE datname = current_database() AND ${where}`,
          [lockPid],
        );
      await waitFor(
        // A close alone waits in close_hold; a batch of closes waits taking its holds' locks first (holds.ts).
        async () =>
          (await activity(`$1 = ANY(pg_blocking_pids(pid)) AND (query ILIKE '%close_hold%' OR query ILIKE '%FROM holds WHERE id = ANY%FOR UPDATE%')`))
            .length >= 1,
        "billing's close_hold of the caught settle to wait on its lock",
        30_000,
      ).catch(async (e) => {
        throw new Error(`${(e as Error).message}; the lock is pid ${lockPid}; activity: ${JSON.stringify(await activity('pid <> $1'))}`);
      });
      await f.kill('billing');
      appliedAtKill = await applied();
    } finally {
      await lock.query('ROLLBACK').catch(() => undefined);
      await lock.end();
    }

    // With billing dead the late calls finish: their answers are 200 and their settles wait on the bus.
    upstream.open('gated-late');
    for (const o of await Promise.all(late)) expect(o.status).toBe(200);
    // Calls that need a hold now are refused with the contract's envelope, never answered 200.
    await waitFor(() => results.some((o) => o.status === 503), 'a call to be refused while billing is down', 30_000);
    loading = false;
    await Promise.all(loaders);
    for (const o of results.filter((r) => r.status !== 200)) {
      expect(o.broken).toBe(false);
      expect({ status: o.status, code: JSON.parse(o.body).error?.code }).toEqual({ status: 503, code: 'upstream_unavailable' });
    }
    // What the dead consumer had read and not acknowledged: the caught settle at least.
    const view = busView(f);
    const pendingAtRestart = await view.unacknowledgedSettles();
    expect(pendingAtRestart).toBeGreaterThanOrEqual(1);

    await f.fleet.restart('billing');
    const ok = results.filter((o) => o.status === 200);
    const okIds = ok.map((o) => o.requestId!);
    expect(new Set(okIds).size).toBe(ok.length);
    // Redelivery: what the dead consumer held is claimed once idle (Redis: 30 s), or its partitions are handed to the
    // restarted member once the dead one's session ends (Kafka); the rest is read anew.
    await waitFor(
      async () =>
        (await f.ledger(`SELECT count(*)::int AS n FROM holds WHERE request_id = ANY($1) AND state = 'settled'`, [okIds]))[0].n === ok.length,
      'every answered call to be settled',
      120_000,
    );
    // The caught settle was committed by its database session after billing died; its redelivery is a no-op, acknowledged.
    try {
      await waitFor(async () => (await view.unacknowledgedSettles()) === 0, 'billing to acknowledge every settle', 120_000);
      expect(await view.deadLetteredSettles()).toBe(0);
    } finally {
      await view.close();
    }
    // A hold whose placing answer billing never sent (killed mid-request) stays open until its expiry: its client got a 503.
    const orphans = await f.ledger<{ id: string; request_id: string }>(`SELECT id, request_id FROM holds WHERE account_id = $1 AND state = 'open'`, [
      acct.accountId,
    ]);
    for (const o of orphans) expect(okIds).not.toContain(o.request_id);
    await expireAndSweep(orphans.map((o) => o.id));

    // Exactly once: each answered call charged its price once, with one usage record; nothing else charged.
    const charged = await f.ledger<{ request_id: string; state: string; charge: string; records: number }>(
      `SELECT h.request_id, h.state, h.charge::text AS charge, (SELECT count(*)::int FROM usage_records u WHERE u.hold_id = h.id) AS records
         FROM holds h WHERE h.account_id = $1`,
      [acct.accountId],
    );
    for (const h of charged) {
      expect(h.records).toBe(1);
      if (okIds.includes(h.request_id)) expect(h).toMatchObject({ state: 'settled', charge: PER_CALL.toString() });
      else expect(h.charge).toBe('0');
    }
    for (const o of ok) expect(JSON.parse(o.body).usage.cost).toBe('0.005');
    const [account] = await f.ledger(`SELECT held::text AS held, total_usage::text AS usage FROM accounts WHERE id = $1`, [acct.accountId]);
    expect(account).toEqual({ held: '0', usage: (BigInt(ok.length) * PER_CALL).toString() });
    process.stdout.write(
      `billing kill (${bus}): ${results.length} calls under load, ${ok.length} answered 200 (${lateCount} settled while billing was dead), ` +
        `${results.length - ok.length} refused 503, ${appliedAtKill} settles applied before the kill, ${pendingAtRestart} unacknowledged at the restart, ` +
        `${orphans.length} orphaned holds expired; money lost 0\n`,
    );
    await expectLedgerInvariants(f);
  }, 240_000);

  /**
   * The embedded twin is test-e2e/jobs-restart.e2e.ts (the whole process killed between two polls, its webhook
   * delivered once). Here only the fleet's jobs process dies, in the job's last step: the upstream has finished, the
   * worker is fetching the result, the hold is still open. The others, billing's bus consumer among them, run on.
   */
  it('a jobs worker SIGKILLed in the last step of a job (upstream done, hold open): a restarted worker takes the job over, completes it and charges it once; every job terminal, leased by a live worker or due', async () => {
    const acct = await f.account(5);
    const c = jobsClient(
      () => f.url,
      () => acct.key,
    );
    const m = `fleet-restart-${Date.now()}`;
    // The result fetch hangs: the worker is killed inside its last step, the upstream done, the hold not yet settled.
    const sub = await c.submit({ model: 'test/video', prompt: 'survive', duration: 4, fake: `${HOLD}/result-hang`, marker: m });
    expect(sub.status).toBe(202);
    const id = sub.json.request_id;
    const job = await falJobOf(fal, m);
    startRunning(job);
    await c.untilStatus(id, 'IN_PROGRESS');
    release(job);
    const resultPath = `/requests/${job.id}`;
    await fal.received((r) => r.method === 'GET' && r.path.endsWith(resultPath), 'the worker fetching the result', 30_000);
    // The worker gives its lease back (due at once) before it asks for the result: a worker that dies in this step
    // leaves the job to the next one at once, with no lease to wait out (drive.ts).
    const jobRow = () =>
      f.ledger<{ status: string; lease_owner: string | null; due: boolean }>(
        `SELECT status, lease_owner, next_poll_at <= now() AS due FROM jobs.jobs WHERE id = $1`,
        [id],
      );
    expect(await jobRow()).toEqual([{ status: 'running', lease_owner: null, due: true }]);

    await f.kill('jobs');
    // The job's routes answer the contract's envelope while no jobs process runs; the hold stays as it was.
    const away = await c.status(id);
    expect({ status: away.status, code: away.json?.error?.code }).toEqual({ status: 503, code: 'upstream_unavailable' });
    expect(await f.ledger(`SELECT state FROM holds WHERE account_id = $1`, [acct.accountId])).toEqual([{ state: 'open' }]);
    expect(await jobRow()).toEqual([{ status: 'running', lease_owner: null, due: true }]);
    // The result answers from now on: the next worker to lease the job gets it.
    job.directives.delete('result-hang');

    await f.fleet.restart('jobs');
    const done = await c.untilCompleted(id, 60_000);
    expect(done).toMatchObject({ status: 'COMPLETED', outcome: 'succeeded', error: null });
    const result = await c.result(id);
    expect(result.status).toBe(200);
    expect(result.json).toMatchObject({ outcome: 'succeeded', cost: '0.2', usage: { video_seconds: '4' } });
    // One upstream submit: the new worker resumed the ticket instead of submitting again.
    expect([...fal.jobs.values()].filter((j) => j.input.marker === m)).toHaveLength(1);

    await settled(f, acct.accountId, 15_000);
    const cost = 4n * nano(VIDEO_RATE);
    expect(await f.ledger(`SELECT state, charge::text AS charge FROM holds WHERE account_id = $1`, [acct.accountId])).toEqual([
      { state: 'settled', charge: cost.toString() },
    ]);
    expect(await f.ledger(`SELECT total_cost::text AS cost FROM usage_records WHERE account_id = $1`, [acct.accountId])).toEqual([
      { cost: cost.toString() },
    ]);
    // Every job of the fleet is terminal, or leased by a live worker, or due for the next worker to lease.
    const unfinished = await f.ledger(
      `SELECT id, status, lease_owner IS NULL AND next_poll_at <= now() + interval '15 seconds' AS due, lease_until > now() AS leased FROM jobs.jobs
        WHERE status NOT IN ('succeeded', 'failed', 'canceled')`,
    );
    for (const j of unfinished) expect({ id: j.id, owned_or_due: j.due || j.leased }).toEqual({ id: j.id, owned_or_due: true });
    expect(await f.ledger(`SELECT status, lease_owner FROM jobs.jobs WHERE id = $1`, [id])).toEqual([{ status: 'succeeded', lease_owner: null }]);
    await expectLedgerInvariants(f);
  }, 120_000);
});
