import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { ensureKafkaBroker, stopKafkaBroker } from 'model-gateway/kafka-broker';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { PG_URL, expectLedgerInvariants, fleetLedger, pickFleetPort, pickPort, settled } from './support/harness';
import { runEntry, type RunningProcess, waitFor } from '@gateway/testing';

/**
 * `BUS=kafka pnpm fleet` with KAFKA_BROKERS unset, at the process level: the launcher runs deploy/kafka's broker with
 * its log under GATEWAY_DATA_DIR/kafka, stops it on exit, and a second start finds that log and the balances again.
 * A broker already running from that directory (here the test's) is used and left running.
 */
const runFleet = (env: Record<string, string>) => runEntry('deploy/local-fleet.ts', env, { detached: true });
// The edge answers before the launcher has heard from every service: its summary (with the bus line) comes after the
// last one is up, which a broker still loading its coordinator can delay by seconds.
const summaryPrinted = (fleet: RunningProcess) => waitFor(() => fleet.output().includes('Fleet ready:'), "the fleet's summary", 60_000);

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url)).status === 200;
  } catch {
    return false;
  }
}

/** Waits for the edge to answer (the broker's first start formats storage and warms a JVM); the output if it exited. */
async function ready(fleet: RunningProcess, base: string): Promise<{ ready: boolean; output: string }> {
  let gone = false;
  void fleet.exited.then(() => (gone = true));
  for (let i = 0; i < 720 && !gone && !(await answers(`${base}/v1/models`)); i++) await new Promise((r) => setTimeout(r, 250));
  return { ready: !gone && (await answers(`${base}/v1/models`)), output: gone ? fleet.output() : '' };
}

describe('BUS=kafka pnpm fleet without KAFKA_BROKERS runs its own broker', () => {
  let dir: string;
  let fake: FakeUpstream;
  const db = `gw_fleet_kafka_${crypto.randomBytes(5).toString('hex')}`;
  const dbUrl = new URL(PG_URL);
  dbUrl.pathname = `/${db}`;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-fleet-kafka-'));
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await stopKafkaBroker(path.join(dir, 'kafka'));
    await fake.close();
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
    await c.end();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the broker log and the balances across a restart, and stops only the broker it started', async () => {
    const configPath = path.join(dir, 'gateway.yaml');
    fs.writeFileSync(
      configPath,
      [
        'providers:',
        `  - { id: mine, kind: openai, base_url: "${fake.url}", timeout_ms: 5000 }`,
        'models:',
        '  - { id: op/kafka, name: Kafka, category: text, status: available, context_length: 2048, max_output_tokens: 16,',
        '      pricing: { prompt: "0.001", completion: "0.002" }, endpoints: [{ provider: mine, model: ok }] }',
        '',
      ].join('\n'),
    );
    const port = await pickFleetPort();
    // The broker listens on its port and its controller on the next.
    const kafkaPort = await pickPort((p) => [p, p + 1], 'the broker');
    const adminToken = `fleet-kafka-${crypto.randomBytes(8).toString('hex')}`;
    const env = {
      PORT: String(port),
      BUS: 'kafka',
      FLEET_KAFKA_PORT: String(kafkaPort),
      GATEWAY_DATA_DIR: dir,
      GATEWAY_CONFIG: configPath,
      GATEWAY_ADMIN_TOKEN: adminToken,
      DATABASE_URL: dbUrl.toString(),
    };
    const base = `http://127.0.0.1:${port}`;
    const ledger = fleetLedger(dbUrl.toString());
    const call = (key: string) =>
      fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'op/kafka', messages: [{ role: 'user', content: 'over kafka' }] }),
      });
    // Nano-USD from the ledger itself: /v1/credits rounds to cents.
    const usage = async () => (await ledger.ledger(`SELECT total_usage::text AS usage FROM accounts WHERE id = $1`, [accountId]))[0]?.usage;
    const metaFile = path.join(dir, 'kafka', 'log', 'meta.properties');
    // The holds topic's partitions as the broker keeps them on disk: <log dir>/<topic>-<partition>/<offset>.log.
    const holdsWritten = () => {
      const log = path.join(dir, 'kafka', 'log');
      return fs
        .readdirSync(log)
        .filter((d) => d.startsWith(`${db}.billing.holds-`))
        .some((d) => fs.readdirSync(path.join(log, d)).some((f) => f.endsWith('.log') && fs.statSync(path.join(log, d, f)).size > 0));
    };
    let key = '';
    let accountId = '';
    let clusterId = '';

    try {
      // First start: the launcher starts the broker under GATEWAY_DATA_DIR/kafka and creates the fleet's topics.
      let fleet = runFleet(env);
      try {
        expect(await ready(fleet, base)).toEqual({ ready: true, output: '' });
        await summaryPrinted(fleet);
        expect(fleet.output()).toContain(`bus: kafka at 127.0.0.1:${kafkaPort} (started by this fleet, stopped with it)`);
        const admin = (p: string, body: unknown) =>
          fetch(`${base}${p}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          }).then((r) => r.json());
        accountId = (await admin('/admin/v1/accounts', { credits: 1 })).data.account_id;
        key = (await admin(`/admin/v1/accounts/${accountId}/keys`, { label: 'kafka' })).data.key;
        const r = await call(key);
        expect(r.status).toBe(200);
        // 3 prompt and 1 completion tokens from the fake upstream: 0.003 + 0.002, settled by billing from the holds topic.
        expect((await r.json()).usage.cost).toBe('0.005');
        await settled(ledger, undefined, 30_000);
        expect(await usage()).toBe('5000000');
        clusterId = fs.readFileSync(metaFile, 'utf8').match(/cluster\.id=(\S+)/)?.[1] ?? '';
        expect(clusterId).not.toBe('');
        expect(holdsWritten()).toBe(true);
      } finally {
        process.kill(-fleet.child.pid!, 'SIGTERM');
      }
      expect(await fleet.exited).toBe(0);
      // It started that broker, so it stopped it.
      expect(await portOpen(kafkaPort)).toBe(false);

      // A broker already serving from the fleet's data directory: the fleet uses it and leaves it running.
      const own = await ensureKafkaBroker({ dataDir: path.join(dir, 'kafka'), port: kafkaPort });
      expect(own.started).toBe(true);
      fleet = runFleet(env);
      try {
        expect(await ready(fleet, base)).toEqual({ ready: true, output: '' });
        await summaryPrinted(fleet);
        expect(fleet.output()).toMatch(new RegExp(`bus: kafka at 127\\.0\\.0\\.1:${kafkaPort}\\n`));
        // The same log (not formatted again) and the same balance; the next call settles on top of it.
        expect(fs.readFileSync(metaFile, 'utf8')).toContain(`cluster.id=${clusterId}`);
        expect(await usage()).toBe('5000000');
        expect((await call(key)).status).toBe(200);
        await settled(ledger, undefined, 30_000);
        expect(await usage()).toBe('10000000');
        await expectLedgerInvariants(ledger);
      } finally {
        process.kill(-fleet.child.pid!, 'SIGTERM');
      }
      expect(await fleet.exited).toBe(0);
      expect(await portOpen(kafkaPort)).toBe(true);
    } finally {
      await ledger.close();
    }
  }, 300_000);
});
