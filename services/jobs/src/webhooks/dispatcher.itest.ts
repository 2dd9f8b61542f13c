import crypto from 'node:crypto';
import path from 'node:path';
import { sqlFileMigration } from '@gateway/db';
import { describeOnEngines, openTestDb, type TestDb } from '@gateway/db/testing';
import { createLogger } from '@gateway/service-kit';
import { type HttpsReceiver, type ReceivedRequest, requireTrustedTestCert, startHttpsReceiver } from '@gateway/testing';
import { createWebhookDispatcher, type WebhookDispatcherOptions } from './dispatcher';
import { verifyWebhook } from './sign';

// Node reads NODE_EXTRA_CA_CERTS only at start-up: without it every delivery would fail on the certificate, so say how to run.
requireTrustedTestCert();

const migrations = [sqlFileMigration('001_jobs', path.join(__dirname, '..', 'sql'), ['001_jobs.sql'])];
const SECRETS: Record<string, string> = { acct_a: 'whsec_a', acct_b: 'whsec_b' };
const logger = createLogger('jobs-webhooks-test', 'silent');

type AttemptRow = {
  attempt: number;
  status_code: number | null;
  error: string | null;
  signed_timestamp: string;
  duration_ms: number;
};

async function until(check: () => Promise<boolean> | boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describeOnEngines('webhook dispatcher', (engine) => {
  let t: TestDb;
  let receiver: HttpsReceiver;

  beforeAll(async () => {
    t = await openTestDb(engine, 'jobs', migrations);
    receiver = await startHttpsReceiver();
  }, 60_000);
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });
  beforeEach(() => {
    receiver.received.length = 0;
  });

  /** What the jobs code writes when a job ends: the job row (minimal) and its pending delivery, due now. */
  async function enqueue(opts: { url?: string; account?: string; body?: string } = {}): Promise<{ id: string; body: string }> {
    const job = `job_${crypto.randomBytes(6).toString('hex')}`;
    const id = `whd_${crypto.randomBytes(8).toString('hex')}`;
    const account = opts.account ?? 'acct_a';
    // Non-ASCII and odd spacing: only the exact bytes verify.
    const body =
      opts.body ??
      `{"request_id":"${job}", "gateway_request_id":"req_1","status":"COMPLETED","outcome":"succeeded","payload":{"caption":"café ☕"},"error":null}`;
    await t.db.query(
      `INSERT INTO jobs (id, account_id, key_id, model, category, status, input, n, duration_seconds, gateway_request_id, hold, webhook_url, completed_at)
       VALUES ($1, $2, 'key_1', 'demo/video', 'video', 'succeeded', '{}'::jsonb, 1, 5, 'req_1', '{}'::jsonb, $3, now())`,
      [job, account, opts.url ?? receiver.url],
    );
    await t.db.query(`INSERT INTO webhook_deliveries (id, job_id, account_id, url, body) VALUES ($1, $2, $3, $4, $5)`, [
      id,
      job,
      account,
      opts.url ?? `${receiver.url}/hooks/job`,
      body,
    ]);
    return { id, body };
  }

  const delivery = async (id: string) =>
    (
      await t.db.query<{ state: string; attempts: number; lease_owner: string | null; completed_at: Date | null }>(
        'SELECT state, attempts, lease_owner, completed_at FROM webhook_deliveries WHERE id = $1',
        [id],
      )
    )[0];
  const attempts = (id: string) =>
    t.db.query<AttemptRow>(
      'SELECT attempt, status_code, error, signed_timestamp::text AS signed_timestamp, duration_ms FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt',
      [id],
    );
  const requestsFor = (id: string): ReceivedRequest[] => receiver.received.filter((r) => r.headers['x-gateway-webhook-id'] === id);

  function dispatcher(settings: Partial<WebhookDispatcherOptions['settings']> = {}, extra: Partial<WebhookDispatcherOptions> = {}) {
    return createWebhookDispatcher({
      db: t.db,
      secretOf: async (account) => SECRETS[account] ?? Promise.reject(new Error(`no account ${account}`)),
      settings: { maxRetries: 5, initialBackoffMs: 10, allowPrivateAddresses: true, ...settings },
      logger,
      timeoutMs: 2_000,
      ...extra,
    });
  }

  /** Runs the dispatcher until the delivery leaves pending (backoff makes retries due a little later). */
  async function settle(d: ReturnType<typeof dispatcher>, id: string): Promise<void> {
    await until(async () => {
      await d.runDue();
      return (await delivery(id)).state !== 'pending';
    }, `delivery ${id} to finish`);
  }

  it('retries until a 2xx: the same id on every attempt, a new timestamp on each, each verifying with the secret, every attempt recorded', async () => {
    const { id, body } = await enqueue();
    receiver.reply(500, 503);
    let clock = 1_800_000_000_000;
    const d = dispatcher({}, { now: () => (clock += 7_000) }); // 7 s between attempts, so timestamps differ
    await settle(d, id);

    const got = requestsFor(id);
    expect(got).toHaveLength(3);
    const stamps = got.map((r) => Number(r.headers['x-gateway-webhook-timestamp']));
    expect(new Set(stamps).size).toBe(3);
    for (const r of got) {
      expect(r.method).toBe('POST');
      expect(r.url).toBe('/hooks/job');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.body.equals(Buffer.from(body, 'utf8'))).toBe(true);
      const ts = Number(r.headers['x-gateway-webhook-timestamp']);
      expect(verifyWebhook('whsec_a', r.headers, r.body, { now: ts * 1000 })).toEqual({ ok: true, id, timestamp: ts });
      expect(verifyWebhook('whsec_b', r.headers, r.body, { now: ts * 1000 }).ok).toBe(false);
    }

    const rows = await attempts(id);
    expect(rows.map((r) => [r.attempt, r.status_code, Number(r.signed_timestamp)])).toEqual([
      [1, 500, stamps[0]],
      [2, 503, stamps[1]],
      [3, 204, stamps[2]],
    ]);
    expect(rows[0].error).toMatch(/500/);
    expect(rows[2].error).toBeNull();
    expect(await delivery(id)).toMatchObject({ state: 'delivered', attempts: 3, lease_owner: null });
    expect((await delivery(id)).completed_at).not.toBeNull();
  });

  it('max_retries 0 is a single shot: one failed attempt, then failed', async () => {
    const { id } = await enqueue();
    receiver.reply(500);
    const d = dispatcher({ maxRetries: 0 });
    expect(await d.runDue()).toBe(1);
    expect(await d.runDue()).toBe(0);
    expect(requestsFor(id)).toHaveLength(1);
    expect(await delivery(id)).toMatchObject({ state: 'failed', attempts: 1 });
    expect((await attempts(id)).map((r) => r.status_code)).toEqual([500]);
  });

  it('exhausted retries end failed after 1 + max_retries attempts, each recorded', async () => {
    const { id } = await enqueue();
    receiver.reply(500, 502, 404);
    const d = dispatcher({ maxRetries: 2 });
    await settle(d, id);
    expect(requestsFor(id)).toHaveLength(3);
    expect(await delivery(id)).toMatchObject({ state: 'failed', attempts: 3 });
    expect((await attempts(id)).map((r) => [r.attempt, r.status_code])).toEqual([
      [1, 500],
      [2, 502],
      [3, 404],
    ]);
  });

  it('a receiver that never answers is a failed attempt with no status, ended by the timeout', async () => {
    const { id } = await enqueue();
    receiver.reply('hang');
    const d = dispatcher({ maxRetries: 1 }, { timeoutMs: 300 });
    await settle(d, id);
    const rows = await attempts(id);
    expect(rows.map((r) => r.status_code)).toEqual([null, 204]);
    expect(rows[0].error).toMatch(/no answer within 300 ms/);
    expect(rows[0].duration_ms).toBeGreaterThanOrEqual(250);
    expect(await delivery(id)).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  it('refused targets are recorded as failed attempts: a private address by default, and http', async () => {
    const priv = await enqueue();
    const http = await enqueue({ url: `http://localhost:${receiver.port}/hook` });
    const d = dispatcher({ maxRetries: 0, allowPrivateAddresses: false });
    await d.runDue();
    expect(receiver.received).toHaveLength(0);
    expect(await delivery(priv.id)).toMatchObject({ state: 'failed', attempts: 1 });
    expect((await attempts(priv.id))[0]).toMatchObject({
      status_code: null,
      error: expect.stringMatching(/refused: localhost resolves to .*not a public address/),
    });
    expect((await attempts(http.id))[0]).toMatchObject({ status_code: null, error: expect.stringMatching(/refused: .*must use https/) });
  });

  it('an account without a secret gets a recorded, unsent attempt', async () => {
    const { id } = await enqueue({ account: 'acct_gone' });
    await dispatcher({ maxRetries: 0 }).runDue();
    expect(requestsFor(id)).toHaveLength(0);
    expect((await attempts(id))[0]).toMatchObject({ status_code: null, error: expect.stringMatching(/no webhook secret/) });
    expect(await delivery(id)).toMatchObject({ state: 'failed' });
  });

  it('two dispatchers racing on one database make each attempt once', async () => {
    const ids = await Promise.all(Array.from({ length: 16 }, () => enqueue()));
    receiver.reply(...Array.from({ length: 6 }, () => 500)); // some deliveries need a retry
    const a = dispatcher({ maxRetries: 3 }, { owner: 'replica-a', concurrency: 3 });
    const b = dispatcher({ maxRetries: 3 }, { owner: 'replica-b', concurrency: 3 });
    const made = { a: 0, b: 0 };
    await until(async () => {
      const [x, y] = await Promise.all([a.runDue(), b.runDue()]);
      made.a += x;
      made.b += y;
      const states = await t.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM webhook_deliveries WHERE id = ANY($1::text[]) AND state = 'pending'`,
        [ids.map((d) => d.id)],
      );
      return states[0].n === 0;
    }, 'every delivery to finish');

    expect(made.a).toBeGreaterThan(0);
    expect(made.b).toBeGreaterThan(0);
    let rows = 0;
    for (const { id } of ids) {
      const got = requestsFor(id);
      const recorded = await attempts(id);
      rows += recorded.length;
      // Each attempt reached the receiver once and was recorded once, numbered without gaps.
      expect(recorded.map((r) => r.attempt)).toEqual(got.map((_, i) => i + 1));
      expect(recorded.map((r) => r.signed_timestamp)).toEqual(got.map((r) => r.headers['x-gateway-webhook-timestamp']));
      expect(await delivery(id)).toMatchObject({ state: 'delivered', attempts: got.length });
    }
    expect(rows).toBe(16 + 6);
    expect(receiver.received).toHaveLength(16 + 6);
    expect(made.a + made.b).toBe(16 + 6);
  });

  it('wake() delivers right away; stop() waits for the attempt in flight and records it', async () => {
    const d = dispatcher({ maxRetries: 0 }, { timeoutMs: 500 });
    d.start(3_600_000);
    try {
      const first = await enqueue();
      d.wake();
      await until(async () => (await delivery(first.id)).state === 'delivered', 'the woken delivery');

      const second = await enqueue();
      receiver.reply('hang');
      d.wake();
      await until(() => requestsFor(second.id).length === 1, 'the hung attempt to reach the receiver');
      await d.stop();
      expect(await attempts(second.id)).toHaveLength(1);
      expect(await delivery(second.id)).toMatchObject({ state: 'failed', lease_owner: null });
    } finally {
      await d.stop();
    }
  });

  it('started without a safety poll, it sends a woken delivery, then its retry when the backoff is due, with no other call', async () => {
    const d = dispatcher({ maxRetries: 1, initialBackoffMs: 300 });
    d.start();
    try {
      await until(async () => (await t.db.query(`SELECT 1 FROM webhook_deliveries WHERE state = 'pending'`)).length === 0, 'older deliveries to end');
      receiver.reply(500);
      const { id } = await enqueue();
      d.wake();
      // The retry is written by the failed attempt, due 300 ms later: only the timer set for that due time sends it.
      await until(async () => (await delivery(id)).state === 'delivered', 'the retry, sent when due');
      expect(requestsFor(id)).toHaveLength(2);
      expect((await attempts(id)).map((a) => a.status_code)).toEqual([500, 204]);
    } finally {
      await d.stop();
    }
  });
});
