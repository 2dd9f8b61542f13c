import { encodeEvent } from '@gateway/bus/testing';
import { createRedisBus } from '@gateway/bus';
import { EVENT_TYPES, type HoldClose, TOPICS } from '@gateway/events';
import { usageRecord } from '@gateway/billing/testing';
import { describeOrSkip, waitFor } from '@gateway/testing';
import { TEXT_PRICE } from '../support/config';
import { expectLedgerInvariants } from '../support/harness';
import { textCost } from '../support/money';
import { type ChatOutcome as Outcome, callerLoop, chatOnce } from './support/chat-load';
import {
  type FaultFleet,
  gatedConfig,
  type GatedUpstream,
  type PrivatePostgres,
  type PrivateRedis,
  privateEnginesSkipReason,
  startFaultFleet,
  startGatedUpstream,
  startPrivatePostgres,
  startPrivateRedis,
} from './support/private-engines';

/**
 * Reliability, item 1 (fleet): PostgreSQL and Redis restarted under the fleet. They are this file's own servers
 * (support/private-engines.ts), never the machine's shared ones; the services are never restarted here.
 */

/** Every call of the gated upstream: 3 prompt and 1 completion tokens at the e2e catalogue's price, 0.005 USD. */
const PER_CALL = textCost(TEXT_PRICE, 3, 1);
/** Calls each outage test holds at the upstream across the outage, so their settles meet it. */
const GATED = 4;

const config = (upstreamUrl: string) => gatedConfig(upstreamUrl, ['ok', 'gated']);

describeOrSkip('fleet: PostgreSQL and Redis restarted under load', privateEnginesSkipReason(), () => {
  let pg: PrivatePostgres;
  let redis: PrivateRedis;
  let upstream: GatedUpstream;
  let f: FaultFleet;

  beforeAll(async () => {
    [pg, redis, upstream] = await Promise.all([startPrivatePostgres(), startPrivateRedis(), startGatedUpstream()]);
    f = await startFaultFleet(config(upstream.url), { postgresUrl: pg.url(), redisUrl: redis.url });
  }, 120_000);
  afterAll(async () => {
    await f?.stop();
    await upstream?.close();
    await Promise.all([pg?.stop(), redis?.stop()]);
  });

  const chat = (key: string, model: string): Promise<Outcome> => chatOnce(f.url, key, model);
  const load = (key: string, callers = 2) => callerLoop(() => chat(key, 'test/ok'), callers);

  /** GATED calls held at the upstream's gate: in flight, their holds placed, once this resolves. */
  async function gatedCalls(key: string): Promise<Promise<Outcome>[]> {
    upstream.shut();
    const gated = Array.from({ length: GATED }, () => chat(key, 'test/gated'));
    await waitFor(() => upstream.waiting() === GATED, 'the gated calls to be in flight', 30_000);
    return gated;
  }

  /** The gate opens: every held call answers, each a 200. */
  async function answerGated(gated: Promise<Outcome>[]): Promise<Outcome[]> {
    upstream.open();
    const answered = await Promise.all(gated);
    for (const o of answered) expect(o.status).toBe(200);
    return answered;
  }

  /** Light load that has served a few calls already: the steady state an outage below interrupts. */
  async function servedLoad(key: string) {
    const l = load(key);
    await waitFor(() => l.results.filter((o) => o.status === 200).length >= 10, 'calls to be served before the outage', 30_000);
    return l;
  }

  const alive = () =>
    Object.entries(f.fleet.processes)
      .filter(([, p]) => p.exitCode !== null || p.signalCode !== null)
      .map(([n]) => n);

  /** Every 200 settled at its exact price, nothing else charged, nothing open: the account's money adds up. */
  async function expectEveryAnswerChargedOnce(accountId: string, answered: Outcome[]): Promise<void> {
    const ids = answered.map((o) => o.requestId!);
    expect(new Set(ids).size).toBe(ids.length);
    await waitFor(
      async () =>
        (await f.ledger(`SELECT count(*)::int AS n FROM holds WHERE request_id = ANY($1) AND state = 'settled'`, [ids]))[0].n === ids.length,
      'every answered call to be settled',
      120_000,
    ).catch(async (e) => {
      const open = await f.ledger(`SELECT request_id, state, created_at FROM holds WHERE request_id = ANY($1) AND state <> 'settled'`, [ids]);
      throw new Error(`${(e as Error).message}: ${JSON.stringify(open)}`);
    });
    const holds = await f.ledger<{ request_id: string; state: string; charge: string }>(
      `SELECT request_id, state, charge::text AS charge FROM holds WHERE account_id = $1`,
      [accountId],
    );
    for (const h of holds) {
      if (ids.includes(h.request_id)) expect(h).toMatchObject({ state: 'settled', charge: PER_CALL.toString() });
      else expect(h.charge).toBe('0');
    }
    const [account] = await f.ledger(`SELECT total_usage::text AS usage FROM accounts WHERE id = $1`, [accountId]);
    expect(account.usage).toBe((BigInt(ids.length) * PER_CALL).toString());
  }

  it('PostgreSQL stopped (crash) and started again: calls during the outage get a 503 envelope and no 200 without a hold, then are served again without restarting any service', async () => {
    const acct = await f.account(20);
    const gated = await gatedCalls(acct.key);
    const l = await servedLoad(acct.key);

    pg.stopServer('immediate');
    const before = l.results.length;
    // Held calls answer while the ledger is down: their holds were placed, their settles wait on the bus.
    const answeredGated = await answerGated(gated);
    // Calls during the outage finish (never hang) with the contract's envelope.
    await waitFor(() => l.results.slice(before).filter((o) => o.status !== 200).length >= 5, 'calls to be refused during the outage', 60_000);
    const during = l.results.slice(before);

    await pg.startServer();
    const back = l.results.length;
    await waitFor(() => l.results.slice(back).some((o) => o.status === 200), 'a call to be served after PostgreSQL is back', 60_000);
    await l.stop();

    for (const o of l.results.filter((r) => r.status !== 200)) {
      expect(o.broken).toBe(false);
      expect({ status: o.status, code: JSON.parse(o.body).error?.code }).toEqual({ status: 503, code: 'upstream_unavailable' });
    }
    expect(alive()).toEqual([]);
    const answered = [...answeredGated, ...l.results.filter((o) => o.status === 200)];
    await expectEveryAnswerChargedOnce(acct.accountId, answered);
    process.stdout.write(
      `postgres restart: ${l.results.length + GATED} calls, ${answered.length} answered 200 (${GATED} settled across the outage), ` +
        `${during.filter((o) => o.status !== 200).length} refused 503 during it; money lost 0\n`,
    );
    await expectLedgerInvariants(f);
  }, 240_000);
  /** The contract's envelope for every refusal, and no hold behind any of them: the meter refuses before routing. */
  async function expectRefusedBeforeAnyHold(refused: Outcome[]): Promise<void> {
    for (const o of refused) {
      expect(o.broken).toBe(false);
      expect({ status: o.status, code: JSON.parse(o.body).error?.code }).toEqual({ status: 503, code: 'upstream_unavailable' });
    }
    const ids = refused.map((o) => o.requestId);
    expect(ids.every((id) => typeof id === 'string')).toBe(true);
    expect((await f.ledger(`SELECT count(*)::int AS n FROM holds WHERE request_id = ANY($1)`, [ids]))[0].n).toBe(0);
  }

  /** What Redis being away does to a keyed call and to a public route: both refused (fail-closed), never a hang. */
  async function expectMeterFailsClosed(key: string): Promise<void> {
    const keyed = await fetch(`${f.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'test/ok', max_tokens: 5, messages: [{ role: 'user', content: 'ping' }] }),
    });
    const body = await keyed.json();
    expect({ status: keyed.status, retryAfter: keyed.headers.get('retry-after'), error: body.error }).toEqual({
      status: 503,
      retryAfter: '1',
      error: {
        code: 'upstream_unavailable',
        message: 'The rate meter is unreachable; try again shortly',
        request_id: expect.stringMatching(/^req_/),
      },
    });
    expect((await f.ledger(`SELECT count(*)::int AS n FROM holds WHERE request_id = $1`, [body.error.request_id]))[0].n).toBe(0);
    const pub = await fetch(`${f.url}/v1/models`);
    expect({ status: pub.status, code: (await pub.json()).error?.code }).toEqual({ status: 503, code: 'upstream_unavailable' });
  }

  it('Redis restarted with its data (SHUTDOWN SAVE) under light load: the meter fails closed, calls answered during the outage are charged once it is back', async () => {
    const acct = await f.account(20);
    const gated = await gatedCalls(acct.key);
    const l = await servedLoad(acct.key);

    await redis.stopServer('save');
    const before = l.results.length;
    // Held calls answer while the bus is down: their settles are refused by the bus, and published again later.
    const answeredGated = await answerGated(gated);
    await waitFor(() => l.results.slice(before).filter((o) => o.status !== 200).length >= 5, 'calls to be refused during the outage', 60_000);
    await expectMeterFailsClosed(acct.key);
    const refusedDuring = l.results.slice(before).filter((o) => o.status !== 200).length;

    await redis.startServer();
    const back = l.results.length;
    await waitFor(() => l.results.slice(back).some((o) => o.status === 200), 'a call to be served after Redis is back', 60_000);
    await l.stop();

    await expectRefusedBeforeAnyHold(l.results.filter((r) => r.status !== 200));
    expect(alive()).toEqual([]);
    const answered = [...answeredGated, ...l.results.filter((o) => o.status === 200)];
    await expectEveryAnswerChargedOnce(acct.accountId, answered);
    process.stdout.write(
      `redis restart (data kept): ${l.results.length + GATED + 1} calls, ${answered.length} answered 200 ` +
        `(${GATED} settled while Redis was away), ${refusedDuring + 1} refused 503 during the outage; money lost 0\n`,
    );
    await expectLedgerInvariants(f);
  }, 240_000);

  /**
   * The worst restart: Redis crashes and comes back empty (no persistence), streams and consumer groups gone. An
   * event it had accepted and not yet delivered is lost with it, and no process of the gateway can tell: that is
   * the operator's to prevent (persistence on the bus's Redis, docs/reliability.md). What is tested is
   * everything the gateway can do: settles it could not publish during the outage, and settles published the moment
   * Redis is back (before billing has re-created its group), are all applied.
   */
  it('Redis crashed and started empty: settles refused during the outage and settles published right after it are applied; the meter fails closed meanwhile', async () => {
    const acct = await f.account(20);
    // Calls held at the upstream across the crash; nothing else is in the bus's stream when it dies.
    const gated = await gatedCalls(acct.key);

    await redis.stopServer('crash');
    const answeredGated = await answerGated(gated);
    await expectMeterFailsClosed(acct.key);

    await redis.startServer();
    // A burst the moment Redis answers: the first settles reach a stream no consumer group reads yet.
    let burst: Outcome[] = [];
    await waitFor(
      async () => {
        burst = [...burst, ...(await Promise.all(Array.from({ length: 6 }, () => chat(acct.key, 'test/ok'))))];
        return burst.filter((o) => o.status === 200).length >= 12;
      },
      'calls to be served after Redis is back',
      60_000,
    );
    await expectRefusedBeforeAnyHold(burst.filter((o) => o.status !== 200));
    expect(alive()).toEqual([]);
    const answered = [...answeredGated, ...burst.filter((o) => o.status === 200)];
    await expectEveryAnswerChargedOnce(acct.accountId, answered);
    process.stdout.write(
      `redis crash (data lost): ${burst.length + GATED + 1} calls, ${answered.length} answered 200 ` +
        `(${GATED} settled while Redis was away, ${burst.filter((o) => o.status === 200).length} right after); money lost 0\n`,
    );
    await expectLedgerInvariants(f);
  }, 240_000);
  /** A settle of one open hold at the gated upstream's price, as text would publish it (keyed by hold). */
  function settleOf(hold: { id: string; account_id: string; request_id: string }): HoldClose {
    return {
      hold_id: hold.id,
      account_id: hold.account_id,
      request_id: hold.request_id,
      outcome: 'settle',
      charge_nano: PER_CALL.toString(),
      record: {
        ...usageRecord,
        model: 'test/gated',
        tokens_prompt: 3,
        native_tokens_prompt: 3,
        generation_time: 1,
        finished_at: new Date().toISOString(),
      },
    };
  }

  /** Calls held at the upstream, their holds open, and the holds as the ledger has them. */
  async function heldCalls(key: string, accountId: string, n: number) {
    upstream.shut();
    const calls = Array.from({ length: n }, () => chat(key, 'test/gated'));
    await waitFor(() => upstream.waiting() === n, 'the gated calls to be in flight', 30_000);
    const holds = await f.ledger<{ id: string; account_id: string; request_id: string }>(
      `SELECT id, account_id, request_id FROM holds WHERE account_id = $1 AND state = 'open'`,
      [accountId],
    );
    expect(holds).toHaveLength(n);
    return { calls, holds };
  }

  it('a redelivery storm of hold-close events, published concurrently with the real settles: each hold charged once', async () => {
    const acct = await f.account(20);
    const holdCount = 10;
    const copies = 20;
    const { calls, holds } = await heldCalls(acct.key, acct.accountId, holdCount);
    const bus = createRedisBus(redis.url, { prefix: f.busPrefix });
    try {
      // Half the copies are redeliveries (the close's own id), half duplicate publishes (ids of their own); the
      // real closes race them as the held calls answer.
      const storm = holds.flatMap((h) =>
        Array.from({ length: copies }, (_, i) =>
          bus.publish(TOPICS.holds, {
            id: i % 2 ? `${h.id}:close` : `${h.id}:close:storm-${i}`,
            type: EVENT_TYPES.holdClose,
            key: h.id,
            data: settleOf(h),
          }),
        ),
      );
      upstream.open();
      await Promise.all(storm);
    } finally {
      await bus.close();
    }
    const answered = await Promise.all(calls);
    for (const o of answered) expect(o.status).toBe(200);
    await expectEveryAnswerChargedOnce(acct.accountId, answered);
    const records = await f.ledger(`SELECT count(*)::int AS n, count(DISTINCT hold_id)::int AS holds FROM usage_records WHERE account_id = $1`, [
      acct.accountId,
    ]);
    expect(records).toEqual([{ n: holdCount, holds: holdCount }]);
    // Every copy was consumed and acknowledged; none was given up on.
    const stream = `${f.busPrefix}${TOPICS.holds}`;
    await waitFor(
      async () => ((await redis.command('XPENDING', stream, 'billing')) as unknown[])[0] === 0,
      'billing to acknowledge every copy',
      30_000,
    );
    expect(await redis.command('XLEN', `${f.busPrefix}dead:${TOPICS.holds}`)).toBe(0);
    process.stdout.write(
      `redelivery storm: ${holdCount * copies} hold-close copies for ${holdCount} holds, charged ${holdCount} times; money lost 0\n`,
    );
    await expectLedgerInvariants(f);
  }, 120_000);

  /**
   * Redis lost billing's consumer group (a restart without its data) and a settle was published before billing's
   * next read re-created the group. MULTI makes that order certain: the group goes and the settle arrives in one
   * step, before billing can notice. Re-created at the stream's tail, the group would skip the settle for good.
   */
  it("billing's consumer group lost with a settle already in the new stream: billing re-creates the group and applies that settle", async () => {
    const acct = await f.account(20);
    const { calls, holds } = await heldCalls(acct.key, acct.accountId, 1);
    const stream = `${f.busPrefix}${TOPICS.holds}`;
    const event = { id: `${holds[0].id}:close`, type: EVENT_TYPES.holdClose, key: holds[0].id, data: settleOf(holds[0]) };
    const [destroyed] = await redis.atomically(['XGROUP', 'DESTROY', stream, 'billing'], ['XADD', stream, '*', 'e', encodeEvent(event)]);
    expect(destroyed).toBe(1);
    // Settled by that event alone: the held call has not answered yet, so nothing else could have closed the hold.
    await waitFor(
      async () => (await f.ledger(`SELECT state FROM holds WHERE id = $1`, [holds[0].id]))[0].state === 'settled',
      'the settle published before the group was re-created to be applied',
      30_000,
    );
    expect(upstream.waiting()).toBe(1);
    upstream.open();
    const [answered] = await Promise.all(calls);
    expect(answered.status).toBe(200);
    await expectEveryAnswerChargedOnce(acct.accountId, [answered]);
    await expectLedgerInvariants(f);
  }, 120_000);
});
