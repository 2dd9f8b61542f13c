import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrations as billingMigrations } from '@gateway/billing';
import { openServiceDb } from '@gateway/db';
import { waitFor, type HttpsReceiver, requireTrustedTestCert, startHttpsReceiver, type RunningProcess } from '@gateway/testing';
import { type FakeFal, startFakeFal } from './support/fake-fal';
import { closedHold, expectLedgerInvariants } from './support/harness';
import { FAL_KEY_ENV, falJobOf, HOLD, jobsClient, jobsConfig, release, startRunning, VIDEO_RATE } from './support/jobs';
import { nano } from './support/money';
import { freePort, startChildGateway } from './support/child-gateway';

/**
 * Embedded only, as a child process (`pnpm start`) on a data directory: the process is killed with SIGKILL while a
 * job runs and started again on the same directory. The job's state, hold and pending delivery are rows, so the new
 * process's worker takes the job over once the dead one's lease lapses.
 */
describe('a job survives its worker killed mid-job (embedded, child process)', () => {
  let dir: string;
  let fal: FakeFal;
  let receiver: HttpsReceiver;
  let port: number;
  const adminToken = `test-admin-${crypto.randomBytes(8).toString('hex')}`;
  const running: RunningProcess[] = [];

  beforeAll(async () => {
    requireTrustedTestCert();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-jobs-restart-'));
    fal = await startFakeFal();
    receiver = await startHttpsReceiver();
    port = await freePort();
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(jsonConfig(fal.url)));
  });
  afterAll(async () => {
    for (const p of running) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(running.map((p) => p.exited));
    await fal?.close();
    await receiver?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const jsonConfig = (falUrl: string) => jobsConfig(falUrl, { jobs: { lease: '2s', poll_interval: '50ms' } });
  const url = () => `http://127.0.0.1:${port}`;

  const start = async (): Promise<RunningProcess> => {
    const p = await startChildGateway({ dir, port, adminToken, env: { [FAL_KEY_ENV]: fal.key } });
    running.push(p);
    return p;
  };

  const admin = async (method: string, p: string, body?: unknown) => {
    const r = await fetch(`${url()}${p}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, json: await r.json() };
  };

  it('completes after a restart: one terminal webhook (one delivery id), one charge, the ledger invariants hold', async () => {
    const first = await start();
    const account = await admin('POST', '/admin/v1/accounts', { credits: 5 });
    expect(account.status).toBe(201);
    const accountId = account.json.data.account_id;
    const key = (await admin('POST', `/admin/v1/accounts/${accountId}/keys`, { label: 'restart' })).json.data.key;
    const secret = (await admin('POST', `/admin/v1/accounts/${accountId}/webhook-secret`)).json.data.secret;
    expect(typeof secret).toBe('string');
    const c = jobsClient(url, () => key);

    const m = `restart-${Date.now()}`;
    const hook = `/hook/${m}`;
    const sub = await c.submit({ model: 'test/video', prompt: 'survive', duration: 4, fake: HOLD, marker: m, webhook_url: `${receiver.url}${hook}` });
    expect(sub.status).toBe(202);
    const id = sub.json.request_id;
    const upstream = await falJobOf(fal, m);
    startRunning(upstream);
    await c.untilStatus(id, 'IN_PROGRESS');
    const polled = upstream.polls;
    // Polled again after it was seen running: the worker is mid-job, its next step due any moment.
    await waitFor(() => upstream.polls > polled, 'the worker to poll the running job again');

    first.child.kill('SIGKILL');
    expect(await first.exited).toBeNull();
    expect(first.child.signalCode).toBe('SIGKILL');
    // The upstream finishes while no gateway runs.
    release(upstream);

    const second = await start();
    const done = await c.untilCompleted(id, 30_000);
    expect(done).toMatchObject({ status: 'COMPLETED', outcome: 'succeeded', error: null });
    const result = await c.result(id);
    expect(result.status).toBe(200);
    const cost = '0.2';
    expect(nano(cost)).toBe(4n * nano(VIDEO_RATE));
    expect(result.json).toMatchObject({ outcome: 'succeeded', cost, usage: { video_seconds: '4' } });
    // Exactly one upstream submit: the restart resumed the ticket instead of submitting again.
    expect([...fal.jobs.values()].filter((j) => j.input.marker === m)).toHaveLength(1);

    await waitFor(() => receiver.received.some((r) => r.url === hook), 'the terminal webhook', 20_000);
    const generation = await (
      await fetch(`${url()}/v1/generation?id=${result.json.gateway_request_id}`, { headers: { authorization: `Bearer ${key}` } })
    ).json();
    expect(generation.data).toMatchObject({ status: 'succeeded', cost });
    await waitFor(
      async () => (await (await fetch(`${url()}/v1/credits`, { headers: { authorization: `Bearer ${key}` } })).json()).data.held === 0,
      'the hold to close',
    );
    const credits = (await (await fetch(`${url()}/v1/credits`, { headers: { authorization: `Bearer ${key}` } })).json()).data;
    expect(credits).toMatchObject({ total_usage: 0.2, held: 0, balance: 4.8 });

    // A clean stop drains the dispatcher; then the ledger on disk is read directly.
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    const deliveries = receiver.received.filter((r) => r.url === hook);
    expect(new Set(deliveries.map((d) => d.headers['x-gateway-webhook-id'])).size).toBe(1);
    const body = JSON.parse(deliveries[0].body.toString());
    expect(body).toMatchObject({ request_id: id, outcome: 'succeeded', gateway_request_id: result.json.gateway_request_id });
    const { verifyWebhook } = await import('@gateway/jobs');
    expect(verifyWebhook(secret, deliveries[0].headers, deliveries[0].body, { now: deliveries[0].at })).toMatchObject({ ok: true });

    const billing = await openServiceDb('billing', billingMigrations, { dataDir: path.join(dir, 'data') });
    try {
      const gw = { ledger: (sql: string, params?: unknown[]) => billing.query(sql, params) as Promise<any[]> };
      expect(await closedHold(gw, accountId, result.json.gateway_request_id)).toEqual({
        amount: String(nano(cost)),
        charge: String(nano(cost)),
        state: 'settled',
      });
      const holds = await gw.ledger(`SELECT state, charge::text AS charge FROM holds WHERE account_id = $1`, [accountId]);
      expect(holds).toEqual([{ state: 'settled', charge: String(nano(cost)) }]);
      const records = await gw.ledger(`SELECT total_cost::text AS cost FROM usage_records WHERE account_id = $1`, [accountId]);
      expect(records).toEqual([{ cost: String(nano(cost)) }]);
      await expectLedgerInvariants(gw);
    } finally {
      await billing.close();
    }
  }, 300_000);
});
