import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Fleet, startFleet } from 'model-gateway/local-fleet';
import { buildIfStale } from 'model-gateway/build';
import { runEntry, waitFor } from '@gateway/testing';
import { serviceCommand } from '@gateway/topology';
import { freePort } from '../support/child-gateway';
import { PG_URL, adminClient, expectLedgerInvariants, fleetLedger, onFleetPorts, openAccount, settled } from '../support/harness';

/**
 * The bundles `pnpm start`, `pnpm fleet`, the image and the chart run (scripts/build.js: dist/<name>.cjs), end to end.
 * Most suites run the embedded gateway inside jest from its TypeScript; here the embedded bundle and a fleet of bundles
 * each start, answer and bill a chat and a stream, and stop, so a bundle that lost a file it reads at run time (SQL,
 * a worker, PGlite's WebAssembly) or a module it needs fails CI.
 */

const chatBody = (stream: boolean) =>
  JSON.stringify({ model: 'demo/chat-small', messages: [{ role: 'user', content: 'bundled?' }], ...(stream ? { stream: true } : {}) });

/** A billed chat and a billed stream on `url` with `key`: each answers 200 with its usage's cost; their request ids. */
async function chatAndStream(url: string, key: string): Promise<{ id: string; cost: string }[]> {
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const plain = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body: chatBody(false) });
  const answer = await plain.json();
  expect({ status: plain.status, content: typeof answer.choices?.[0]?.message?.content }).toEqual({ status: 200, content: 'string' });
  const streamed = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers, body: chatBody(true) });
  const text = await streamed.text();
  expect({ status: streamed.status, done: text.trimEnd().endsWith('data: [DONE]') }).toEqual({ status: 200, done: true });
  const usage = text
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map((l) => JSON.parse(l.slice(6)))
    .find((c) => c.usage)?.usage;
  const calls = [
    { id: plain.headers.get('x-gateway-request-id')!, cost: answer.usage.cost as string },
    { id: streamed.headers.get('x-gateway-request-id')!, cost: usage?.cost as string },
  ];
  for (const c of calls) expect(Number(c.cost)).toBeGreaterThan(0);
  return calls;
}

/** Each call's generation record, once written: succeeded, at the cost its answer reported. */
async function expectBilled(url: string, key: string, calls: { id: string; cost: string }[]): Promise<void> {
  for (const call of calls) {
    let gen: any;
    await waitFor(
      async () => {
        const r = await fetch(`${url}/v1/generation?id=${call.id}`, { headers: { authorization: `Bearer ${key}` } });
        gen = r.status === 200 ? (await r.json()).data : undefined;
        return gen?.status === 'succeeded';
      },
      `the generation record of ${call.id}`,
      30_000,
    );
    expect({ id: gen.id, cost: gen.cost }).toEqual({ id: call.id, cost: call.cost });
  }
}

describe('the built bundles', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-bundles-'));
  beforeAll(async () => {
    await buildIfStale();
  }, 120_000);
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("the embedded gateway's bundle starts on an empty data directory, bills a chat and a stream, and drains on SIGTERM", async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const adminToken = `bundle-admin-${crypto.randomBytes(8).toString('hex')}`;
    const p = runEntry('dist/gateway.cjs', {
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      GATEWAY_PUBLIC_URL: url,
      GATEWAY_DATA_DIR: path.join(dir, 'embedded'),
      GATEWAY_ADMIN_TOKEN: adminToken,
      LOG_LEVEL: 'info',
    });
    try {
      await waitFor(
        async () => {
          if (p.child.exitCode !== null) throw new Error(`the bundle exited ${p.child.exitCode}:\n${p.output()}`);
          return (await fetch(`${url}/v1/models`).catch(() => undefined))?.ok === true;
        },
        'the bundled gateway to answer',
        90_000,
      );
      const acct = await openAccount(adminClient(url, adminToken), 1);
      await expectBilled(url, acct.key, await chatAndStream(url, acct.key));
      p.child.kill('SIGTERM');
      expect(await p.exited).toBe(0);
      expect(p.output()).toMatch(/"msg":"draining"[\s\S]*"msg":"drained"/);
    } finally {
      if (p.child.exitCode === null) p.child.kill('SIGKILL');
    }
  }, 150_000);

  it('a fleet runs every process from its bundle, and bills a chat and a stream through them', async () => {
    const db = new URL(PG_URL);
    db.pathname = `/gw_bundles_${crypto.randomBytes(5).toString('hex')}`;
    const adminToken = `bundle-admin-${crypto.randomBytes(8).toString('hex')}`;
    const fleet: Fleet = await onFleetPorts((port) =>
      startFleet({
        port,
        from: 'bundle',
        databaseUrl: db.toString(),
        adminToken,
        dropDatabaseOnStop: true,
        logDir: dir,
        dataDir: path.join(dir, 'fleet'),
        env: { LOG_LEVEL: 'warn' },
      }),
    );
    const ledger = fleetLedger(db.toString());
    try {
      for (const [name, child] of Object.entries(fleet.processes)) {
        const argv = fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
        expect({ name, argv }).toEqual({ name, argv: [process.execPath, ...serviceCommand(name).slice(1)] });
      }
      const acct = await openAccount(adminClient(fleet.url, adminToken), 1);
      await expectBilled(fleet.url, acct.key, await chatAndStream(fleet.url, acct.key));
      await settled(ledger, acct.accountId, 30_000);
      await expectLedgerInvariants(ledger);
    } finally {
      await ledger.close();
      await fleet.stop();
    }
  }, 180_000);
});
