import { describeOnEngines, openTestDb, type TestDb } from '@gateway/db/testing';
import { createSimulatedQueue } from '@gateway/upstreams';
import { type SpendFixture, spendFixture, testContext } from '@gateway/spend/testing';
import { PaidCall, holdRecordToJSON } from '@gateway/spend';
import { videoWorstCase } from '@gateway/pricing';
import { newRequestId } from '@gateway/service-kit';
import { waitFor } from '@gateway/testing';
import type { MediaFilesPort } from '../media/port';
import { migrations } from '../migrations';
import type { JobRow } from '../store/job-row';
import { findJobById, insertJob, nextClaimIn } from '../store/jobs';
import { createRelay } from '../store/relay';
import { createWorker } from './worker';

describeOnEngines('jobs worker', (engine) => {
  let t: TestDb;
  let spend: SpendFixture;
  let clock = Date.now();
  const kept: string[] = [];
  const media: MediaFilesPort = {
    keep: async (_owner, bytes, contentType) => {
      kept.push(`${contentType}:${bytes.length}`);
      return { id: `file_${kept.length}` };
    },
    serve: async () => undefined,
  };

  beforeAll(async () => {
    t = await openTestDb(engine, 'jobs', migrations);
  }, 60_000);
  afterAll(async () => t?.close());
  beforeEach(async () => {
    spend = await spendFixture([
      { id: 'a/video', endpoints: ['sim/video'], category: 'video', second: '0.05' },
      { id: 'a/broken', endpoints: ['down/video'], category: 'video', second: '0.05' },
    ]);
    kept.length = 0;
    clock = Date.now();
  });
  afterEach(async () => spend.close());

  const protocol = createSimulatedQueue(() => clock);
  function worker(opts: { timeoutMs?: number; idleMs?: number } = {}) {
    return createWorker(
      {
        db: t.db,
        bus: spend.bus,
        logger: spend.deps.logger,
        spend: spend.deps,
        media,
        publicUrl: 'https://gw.example',
        protocolOf: () => protocol,
        pollIntervalMs: 0,
        timeoutMs: opts.timeoutMs ?? 60_000,
      },
      { leaseMs: 60_000, idleMs: opts.idleMs },
    );
  }

  /** A job as the submit route leaves it: its hold placed through the money flow, the row holding the record. */
  async function submitted(model: string, input: Record<string, unknown>): Promise<JobRow> {
    const ctx = testContext();
    const paid = await PaidCall.begin(spend.deps, {
      ctx,
      category: 'video',
      slugs: [model],
      streamed: false,
      worstCase: (m) => videoWorstCase(m, 1, input.duration as number),
    });
    return insertJob(t.db, {
      id: newRequestId('job'),
      accountId: ctx.accountId,
      keyId: ctx.keyId,
      model,
      category: 'video',
      input,
      n: 1,
      durationSeconds: input.duration as number,
      webhookUrl: null,
      idempotencyKey: null,
      requestFingerprint: null,
      gatewayRequestId: ctx.requestId,
      hold: holdRecordToJSON(paid.record),
    });
  }

  async function settledThroughOutbox() {
    await createRelay(t.db, spend.bus, spend.deps.logger).drain();
    await spend.billing.delivered();
  }

  it('drives a job from the queue to its end on the clock: submitted, running, then settled on the seconds delivered', async () => {
    const job = await submitted('a/video', { prompt: 'p', duration: 2 });
    const w = worker();
    await w.tick();
    expect((await findJobById(t.db, job.id))?.ticket).not.toBeNull();
    clock += 400;
    await w.tick();
    expect((await findJobById(t.db, job.id))?.status).toBe('running');
    clock += 5_000;
    await w.tick();
    const done = await findJobById(t.db, job.id);
    expect(done?.status).toBe('succeeded');
    expect(done?.usage).toEqual({ video_seconds: '2' });
    expect(done?.charge_nano).toBe('100000000');
    expect(JSON.stringify(done?.payload)).toContain('https://gw.example/v1/files/file_1');
    expect(kept).toHaveLength(1);
    await settledThroughOutbox();
    expect(spend.billing.closes).toEqual([expect.objectContaining({ outcome: 'settle', charge_nano: '100000000' })]);
    expect(spend.billing.open()).toEqual([]);
    await w.stop();
  });

  it('a job past jobs.timeout fails with 503 and its hold is released, without asking the upstream again', async () => {
    const job = await submitted('a/video', { prompt: 'p', duration: 5 });
    const w = worker({ timeoutMs: 1_000 });
    await t.db.query(`UPDATE jobs SET created_at = now() - interval '1 hour' WHERE id = $1`, [job.id]);
    await w.tick();
    const done = await findJobById(t.db, job.id);
    expect(done?.status).toBe('failed');
    expect(done?.error).toEqual({ code: 'upstream_unavailable', message: 'The job did not finish in time', status: 503 });
    expect(done?.ticket).toBeNull();
    await settledThroughOutbox();
    expect(spend.billing.closes).toEqual([expect.objectContaining({ outcome: 'release', charge_nano: '0' })]);
    await w.stop();
  });

  it('a content refusal at the result ends the job failed with 400 and releases the hold once', async () => {
    const job = await submitted('a/video', { prompt: 'a [[reject]] scene', duration: 1 });
    const w = worker();
    await w.tick();
    clock += 10_000;
    await w.tick();
    const done = await findJobById(t.db, job.id);
    expect(done?.status).toBe('failed');
    expect(done?.error).toMatchObject({ code: 'invalid_request', status: 400 });
    await settledThroughOutbox();
    expect(spend.billing.closes.map((c) => c.outcome)).toEqual(['release']);
    await w.stop();
  });

  /** Other tests' jobs (this suite shares one database) are put a day away, so only `id` is due soon. */
  const onlyDueSoon = (id: string) =>
    t.db.query(`UPDATE jobs SET next_poll_at = now() + interval '1 day' WHERE status IN ('queued', 'running') AND id <> $1`, [id]);

  it('a started worker wakes when the next job is due, not after its idle sleep, and without being told', async () => {
    const job = await submitted('a/video', { prompt: 'p', duration: 1 });
    await onlyDueSoon(job.id);
    await t.db.query(`UPDATE jobs SET next_poll_at = now() + interval '1 second' WHERE id = $1`, [job.id]);
    const soonest = await nextClaimIn(t.db);
    expect(soonest).toBeGreaterThan(500);
    expect(soonest).toBeLessThanOrEqual(1_000);
    // No idle bound, as embedded: its first pass finds nothing due; only the sleep it chose brings it back.
    const w = worker({ idleMs: Number.POSITIVE_INFINITY });
    w.start();
    await waitFor(async () => (await findJobById(t.db, job.id))?.ticket != null, 'the worker to submit the job once it was due', 20_000);
    await w.stop();
  });

  it('a job leased by a worker that died is due when the lease lapses, and a sleeping worker takes it over then', async () => {
    const job = await submitted('a/video', { prompt: 'p', duration: 1 });
    await onlyDueSoon(job.id);
    await t.db.query(`UPDATE jobs SET next_poll_at = now(), lease_owner = 'worker_dead', lease_until = now() + interval '1 second' WHERE id = $1`, [
      job.id,
    ]);
    // Due now, but not claimable before the lease lapses: the sleep runs to the lease's end.
    const soonest = await nextClaimIn(t.db);
    expect(soonest).toBeGreaterThan(500);
    expect(soonest).toBeLessThanOrEqual(1_000);
    const w = worker({ idleMs: Number.POSITIVE_INFINITY });
    w.start();
    await waitFor(
      async () => (await findJobById(t.db, job.id))?.lease_owner !== 'worker_dead',
      'a live worker to take the lapsed lease over',
      20_000,
    );
    await w.stop();
  });

  it('a started worker with nothing due and no idle bound drives a job written later as soon as it is woken', async () => {
    await onlyDueSoon('none');
    const w = worker({ idleMs: Number.POSITIVE_INFINITY });
    w.start();
    await w.tick(); // its first pass is over: nothing is due, so no timer is set and only a wake brings it back
    const job = await submitted('a/video', { prompt: 'p', duration: 1 });
    w.wake();
    await waitFor(async () => (await findJobById(t.db, job.id))?.ticket != null, 'the woken worker to submit the job', 20_000);
    await w.stop();
  });
});
