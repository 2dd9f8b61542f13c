import { createMemoryBus, type BusEvent } from '@gateway/bus';
import { describeOnEngines, openTestDb, type TestDb } from '@gateway/db/testing';
import { EVENT_TYPES, TOPICS } from '@gateway/events';
import { createLogger, newRequestId } from '@gateway/service-kit';
import { waitFor } from '@gateway/testing';
import { holdRecordToJSON } from '@gateway/spend';
import { migrations } from '../migrations';
import { endJob } from '../transitions';
import { claimDue, insertJob, releaseLease } from './jobs';
import { createRelay } from './relay';

const logger = createLogger('jobs-store-test', 'silent');

describeOnEngines('jobs store: leases, single endings, the outbox', (engine) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb(engine, 'jobs', migrations, { poolSize: 8 });
  }, 60_000);
  afterAll(async () => t?.close());
  beforeEach(async () => {
    await t.db.exec('DELETE FROM webhook_attempts; DELETE FROM webhook_deliveries; DELETE FROM outbox; DELETE FROM jobs;');
  });

  async function addJob(webhook = true) {
    const requestId = newRequestId();
    const hold = holdRecordToJSON({
      holdId: `hold_${requestId}`,
      accountId: 'acct_1',
      keyId: 'key_1',
      requestId,
      amountNano: 500_000_000n,
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      model: 'a/video',
      streamed: false,
      startedAt: Date.now(),
    });
    return insertJob(t.db, {
      id: newRequestId('job'),
      accountId: 'acct_1',
      keyId: 'key_1',
      model: 'a/video',
      category: 'video',
      input: { prompt: 'p' },
      n: 1,
      durationSeconds: 5,
      webhookUrl: webhook ? 'https://hooks.example/x' : null,
      idempotencyKey: null,
      requestFingerprint: null,
      gatewayRequestId: requestId,
      hold,
    });
  }

  const outbox = async () => (await t.db.query<{ topic: string; event: BusEvent }>('SELECT topic, event FROM outbox ORDER BY seq')).map((r) => r);

  it('two workers claiming at once never lease the same job', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 12; i++) ids.add((await addJob(false)).id);
    const [a, b, c] = await Promise.all([claimDue(t.db, 'w_a', 60_000, 5), claimDue(t.db, 'w_b', 60_000, 5), claimDue(t.db, 'w_c', 60_000, 5)]);
    const claimed = [...a, ...b, ...c].map((j) => j.id);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.length).toBe(12);
    expect(await claimDue(t.db, 'w_d', 60_000, 5)).toEqual([]);
  });

  it("a dead worker's lapsed lease is taken over, and the dead worker can no longer write", async () => {
    const job = await addJob(false);
    const [first] = await claimDue(t.db, 'w_dead', 1, 1);
    expect(first.id).toBe(job.id);
    await t.db.query(`UPDATE jobs SET lease_until = now() - interval '1 second' WHERE id = $1`, [job.id]);
    const [taken] = await claimDue(t.db, 'w_alive', 60_000, 1);
    expect(taken.id).toBe(job.id);
    expect(await releaseLease(t.db, job.id, 'w_dead', 0)).toBe(false);
    expect(await releaseLease(t.db, job.id, 'w_alive', 0)).toBe(true);
  });

  it('a job raced to its end by cancel and the worker ends once: one hold close, one delivery, one terminal event', async () => {
    const job = await addJob(true);
    const bus = createMemoryBus();
    const deps = { db: t.db, bus, logger };
    const usage = { chargeNano: 250_000_000n, tokensPrompt: 0, tokensCompletion: 0, finishReason: null, videoSeconds: '5' };
    const results = await Promise.all([
      endJob(deps, job.id, { outcome: 'canceled' }),
      endJob(deps, job.id, { outcome: 'succeeded', payload: { video: { url: 'x' } }, usage, videoFileId: null, facts: {} }),
      endJob(deps, job.id, { outcome: 'failed', error: { code: 'upstream_unavailable', message: 'x', status: 503 }, facts: {} }),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const events = await outbox();
    expect(events.filter((e) => e.topic === TOPICS.holds && e.event.type === EVENT_TYPES.holdClose)).toHaveLength(1);
    expect(events.filter((e) => e.topic === TOPICS.jobs)).toHaveLength(1);
    const [{ n }] = await t.db.query<{ n: string }>('SELECT count(*)::text AS n FROM webhook_deliveries WHERE job_id = $1', [job.id]);
    expect(n).toBe('1');
    await bus.close();
  });

  it('a failed state write publishes nothing: the hold close rides in the same transaction', async () => {
    const job = await addJob(false);
    const bus = createMemoryBus();
    const failing = {
      ...t.db,
      transaction: <T>(fn: (tx: Parameters<Parameters<typeof t.db.transaction>[0]>[0]) => Promise<T>) =>
        t.db.transaction(async (tx) => {
          await fn(tx);
          throw new Error('crash before commit');
        }),
    };
    await expect(endJob({ db: failing, bus, logger }, job.id, { outcome: 'canceled' })).rejects.toThrow('crash before commit');
    expect(await outbox()).toEqual([]);
    const [row] = await t.db.query<{ status: string }>('SELECT status FROM jobs WHERE id = $1', [job.id]);
    expect(row.status).toBe('queued');
    await bus.close();
  });

  it('the relay publishes each outbox event once, even with two relays draining at once', async () => {
    for (let i = 0; i < 5; i++) await endJob({ db: t.db, bus: createMemoryBus(), logger }, (await addJob(false)).id, { outcome: 'canceled' });
    const bus = createMemoryBus();
    const seen: string[] = [];
    await bus.subscribe('test', [TOPICS.holds, TOPICS.jobs], async (e) => void seen.push(e.id));
    await Promise.all([createRelay(t.db, bus, logger).drain(), createRelay(t.db, bus, logger).drain()]);
    await bus.close();
    expect(seen).toHaveLength(10);
    expect(new Set(seen).size).toBe(10);
    expect(await outbox()).toEqual([]);
  });

  it('a relay whose bus refuses the publish tries again on its own, without a wake or a safety poll', async () => {
    await endJob({ db: t.db, bus: createMemoryBus(), logger }, (await addJob(false)).id, { outcome: 'canceled' });
    const bus = createMemoryBus();
    const seen: string[] = [];
    await bus.subscribe('test', [TOPICS.holds, TOPICS.jobs], async (e) => void seen.push(e.id));
    let refusals = 2;
    const flaky = {
      ...bus,
      publish: async (topic: string, event: BusEvent) => {
        if (refusals-- > 0) throw new Error('bus down');
        return bus.publish(topic, event);
      },
    };
    const relay = createRelay(t.db, flaky, logger);
    relay.start();
    await waitFor(() => seen.length === 2, 'the relay to publish after the bus came back', 20_000);
    await relay.stop();
    await bus.close();
    expect(refusals).toBeLessThan(0);
    expect(await outbox()).toEqual([]);
  });
});
