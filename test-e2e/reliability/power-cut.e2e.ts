import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openServiceDb } from '@gateway/db';
import { waitFor, type RunningProcess } from '@gateway/testing';
import { migrations as billingMigrations } from '@gateway/billing';
import { freePort, startChildGateway } from '../support/child-gateway';
import { testConfig, TEXT_PRICE } from '../support/config';
import { startFakeFal, type FakeFal } from '../support/fake-fal';
import { startFakeOpenAI, type FakeUpstream } from '../support/fake-openai';
import { expectLedgerInvariants } from '../support/harness';
import { FAL_KEY_ENV, jobsConfig } from '../support/jobs';
import { textCost } from '../support/money';
import { powerCutDisk, type PowerCutDisk } from '../support/powercut';

const PER_CALL = textCost(TEXT_PRICE, 3, 1);
/**
 * A paid call is answered before its settle is on disk (the settle is journalled, and synced, a few milliseconds
 * after the answer): a cut can catch the settles of answers that young, as docs/reliability.md says. A top-up and a
 * job submission are answered only once durable: none of them may be lost, however young.
 */
const LOSS_WINDOW_MS = 1_000;
const NANO_PER_CENT = 10_000_000n;
const mcpInitialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'power-cut', version: '1' } },
};

/**
 * The embedded gateway on a disk that keeps only what was synced (test-e2e/support/powercut: an LD_PRELOAD shim
 * copies a file to the durable side only when the process fsyncs it; creations, renames and deletions reach it at
 * once). Paid calls, top-ups, job submissions, new keys and MCP sessions run; the power goes mid-traffic; the gateway starts again on what
 * the disk kept. Every acknowledged write is there, exactly once, and the ledger balances.
 */
describe('the embedded gateway after a power cut (unsynced writes lost)', () => {
  let dir: string;
  let disk: PowerCutDisk;
  let fake: FakeUpstream;
  let fal: FakeFal;
  let port: number;
  const adminToken = `test-admin-${crypto.randomBytes(8).toString('hex')}`;
  const running: RunningProcess[] = [];

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-powercut-'));
    disk = powerCutDisk(path.join(dir, 'data'));
    [fake, fal] = await Promise.all([startFakeOpenAI(), startFakeFal()]);
    port = await freePort();
    const text = testConfig(fake.url);
    const jobs = jobsConfig(fal.url);
    const config = {
      ...text,
      providers: [...text.providers, jobs.providers[0]],
      models: [...text.models, jobs.models[0]],
      jobs: jobs.jobs,
    };
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  });
  afterAll(async () => {
    for (const p of running) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
    await Promise.all(running.map((p) => p.exited));
    await Promise.all([fake?.close(), fal?.close()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const url = () => `http://127.0.0.1:${port}`;
  const start = async (env: Record<string, string> = {}) => {
    const p = await startChildGateway({ dir, port, adminToken, env: { [FAL_KEY_ENV]: fal.key, ...env } });
    running.push(p);
    return p;
  };
  const post = async (p: string, body: unknown, auth: string) => {
    const r = await fetch(`${url()}${p}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: r.status, headers: r.headers, json: (await r.json()) as any };
  };

  it('keeps every acknowledged top-up, job submission, key and MCP session, and every settle older than the window, exactly once', async () => {
    // Installed and stopped cleanly: what the first start wrote is on disk, as after a shutdown and a sync.
    const first = await start();
    const accountId = (await post('/admin/v1/accounts', { credits: 1000, rate_limit: { requests: 1_000_000, interval: '60s' } }, adminToken)).json
      .data.account_id;
    const key = (await post(`/admin/v1/accounts/${accountId}/keys`, { label: 'power' }, adminToken)).json.data.key;
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    disk.syncAll();

    const second = await start(disk.env);
    let cut = false;
    const answered: { requestId: string; at: number }[] = [];
    // Each top-up a distinct number of cents (k), so each is found by its amount: acknowledged ones exactly once.
    const toppedUp: number[] = [];
    const toppingUp = new Set<number>();
    const submitted: string[] = [];
    const keys: string[] = [];
    const sessions: string[] = [];
    const caller = async () => {
      while (!cut) {
        try {
          const r = await post('/v1/chat/completions', { model: 'test/ok', messages: [{ role: 'user', content: 'ping' }], max_tokens: 5 }, key);
          if (r.status === 200 && r.json.choices) answered.push({ requestId: r.headers.get('x-gateway-request-id')!, at: Date.now() });
        } catch {
          // cut mid-flight: never answered
        }
      }
    };
    const topper = async () => {
      for (let k = 1; !cut; k++) {
        toppingUp.add(k);
        try {
          const r = await post(`/admin/v1/accounts/${accountId}/credits`, { amount: k / 100 }, adminToken);
          if (r.status === 200) toppedUp.push(k);
          toppingUp.delete(k);
        } catch {
          // cut mid-flight: may or may not have reached the disk
        }
      }
    };
    const submitter = async () => {
      while (!cut) {
        try {
          const r = await post('/v1/queue/test/video', { prompt: 'a lighthouse', duration: 1 }, key);
          if (r.status === 200 || r.status === 202) submitted.push(r.json.request_id);
        } catch {
          // cut mid-flight
        }
      }
    };
    // Admin writes other than money, and MCP sessions: each kept once acknowledged, like everything in PGlite.
    const keyMaker = async () => {
      while (!cut) {
        try {
          const r = await post(`/admin/v1/accounts/${accountId}/keys`, { label: 'cut' }, adminToken);
          if (r.status === 201) keys.push(r.json.data.key);
          const m = await fetch(`${url()}/v1/mcp`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
            body: JSON.stringify(mcpInitialize),
          });
          await m.text();
          if (m.status === 200) sessions.push(m.headers.get('mcp-session-id')!);
        } catch {
          // cut mid-flight
        }
      }
    };
    const load = [...Array.from({ length: 8 }, caller), topper(), submitter(), keyMaker()];
    await waitFor(
      () =>
        answered.length >= 300 &&
        toppedUp.length >= 20 &&
        submitted.length >= 20 &&
        sessions.length >= 10 &&
        answered[0].at < Date.now() - 2 * LOSS_WINDOW_MS,
      'the load to run a while',
      120_000,
    );
    const cutAt = Date.now();
    second.child.kill('SIGKILL');
    cut = true;
    await second.exited;
    await Promise.all(load);
    disk.cut();

    // Started on what the disk kept: PGlite recovers, the journal replays, the holds the cut left open are released.
    const third = await start();
    const missingJobs: string[] = [];
    for (const id of submitted) {
      const r = await fetch(`${url()}/v1/queue/requests/${id}/status`, { headers: { authorization: `Bearer ${key}` } });
      if (r.status !== 200) missingJobs.push(`${id}: ${r.status}`);
    }
    const missingKeys: string[] = [];
    for (const k of keys) {
      const r = await fetch(`${url()}/v1/credits`, { headers: { authorization: `Bearer ${k}` } });
      if (r.status !== 200) missingKeys.push(`${k.slice(0, 12)}…: ${r.status}`);
    }
    const missingSessions: string[] = [];
    for (const session of sessions) {
      const r = await fetch(`${url()}/v1/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': session,
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
      await r.text();
      if (r.status !== 200) missingSessions.push(`${session}: ${r.status}`);
    }
    third.child.kill('SIGTERM');
    expect(await third.exited).toBe(0);
    expect({ missingJobs, missingKeys, missingSessions }).toEqual({ missingJobs: [], missingKeys: [], missingSessions: [] });

    const billing = await openServiceDb('billing', billingMigrations, { dataDir: disk.live });
    try {
      const gw = { ledger: (sql: string, params?: unknown[]) => billing.query(sql, params) as Promise<any[]> };
      await expectLedgerInvariants(gw);
      // Only the video jobs still running against the fake fal hold money; no paid call's hold outlived the cut.
      expect(await gw.ledger(`SELECT id, model FROM holds WHERE state = 'open' AND model <> 'test/video'`)).toEqual([]);

      const credits = (await gw.ledger(`SELECT amount::text AS amount FROM credit_entries WHERE account_id = $1`, [accountId])).map((r) =>
        BigInt(r.amount),
      );
      const count = (cents: number) => credits.filter((a) => a === BigInt(cents) * NANO_PER_CENT).length;
      expect(toppedUp.filter((k) => count(k) !== 1)).toEqual([]);
      // Besides the acknowledged ones, only the one the cut caught in flight may be there, and once at most.
      const expectedEntries = 1 + toppedUp.length;
      expect(credits.length === expectedEntries || (credits.length === expectedEntries + 1 && [...toppingUp].some((k) => count(k) === 1))).toBe(true);

      const records = new Map(
        (await gw.ledger(`SELECT request_id, total_cost::text AS cost FROM usage_records WHERE account_id = $1`, [accountId])).map((r) => [
          r.request_id,
          r.cost,
        ]),
      );
      const old = answered.filter((a) => a.at < cutAt - LOSS_WINDOW_MS);
      expect(old.length).toBeGreaterThan(0);
      expect(old.filter((a) => records.get(a.requestId) !== PER_CALL.toString())).toEqual([]);
      const [{ usage }] = await gw.ledger(`SELECT total_usage::text AS usage FROM accounts WHERE id = $1`, [accountId]);
      expect(usage).toBe([...records.values()].reduce((sum, c) => sum + BigInt(c), 0n).toString());
      const young = answered.filter((a) => a.at >= cutAt - LOSS_WINDOW_MS && records.get(a.requestId) !== PER_CALL.toString());
      console.log(
        `power cut: ${answered.length} answered calls (${young.length} inside the last ${LOSS_WINDOW_MS} ms unsettled), ${toppedUp.length} top-ups, ${submitted.length} job submissions, ${keys.length} keys, ${sessions.length} MCP sessions acknowledged; all kept`,
      );
    } finally {
      await billing.close();
    }
  }, 300_000);
});
