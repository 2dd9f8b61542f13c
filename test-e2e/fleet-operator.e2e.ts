import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { PG_URL, pickFleetPort } from './support/harness';
import { runEntry } from '@gateway/testing';
import { buildIfStale } from 'model-gateway/build';

/**
 * `pnpm fleet` at the process level, started the way an operator starts it: the operator contract's variables
 * (../shared/spec/operations.md) and nothing else, a custom config, exit codes, SIGTERM.
 */
/**
 * What `pnpm fleet` runs (package.json): the launcher's bundle, built when stale, which starts every service's bundle;
 * in its own process group so the test can stop every service with it.
 */
const runFleet = (env: Record<string, string>) => runEntry('dist/fleet.cjs', env, { detached: true });

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url)).status === 200;
  } catch {
    return false;
  }
}

describe('pnpm fleet honours the operator contract', () => {
  let dir: string;
  let fake: FakeUpstream;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-fleet-operator-'));
    fake = await startFakeOpenAI();
    await buildIfStale();
  }, 120_000);
  afterAll(async () => {
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves the catalogue of GATEWAY_CONFIG on PORT, routes to its upstream, and drains on SIGTERM', async () => {
    const configPath = path.join(dir, 'gateway.yaml');
    fs.writeFileSync(
      configPath,
      [
        'providers:',
        `  - { id: mine, kind: openai, base_url: "${fake.url}", timeout_ms: 5000 }`,
        'models:',
        '  - id: operator/custom',
        '    name: Custom',
        '    category: text',
        '    status: available',
        '    context_length: 2048',
        '    max_output_tokens: 16',
        '    pricing: { prompt: "0.001", completion: "0.002" }',
        '    endpoints: [{ provider: mine, model: ok }]',
        '',
      ].join('\n'),
    );
    const port = await pickFleetPort();
    const db = `gw_fleet_op_${crypto.randomBytes(5).toString('hex')}`;
    const dbUrl = new URL(PG_URL);
    dbUrl.pathname = `/${db}`;
    const adminToken = `fleet-op-${crypto.randomBytes(8).toString('hex')}`;
    const fleet = runFleet({
      PORT: String(port),
      GATEWAY_CONFIG: configPath,
      GATEWAY_ADMIN_TOKEN: adminToken,
      DATABASE_URL: dbUrl.toString(),
      REDIS_URL: 'redis://127.0.0.1:6379',
    });
    const base = `http://127.0.0.1:${port}`;
    try {
      let gone = false;
      void fleet.exited.then(() => (gone = true));
      for (let i = 0; i < 240 && !gone && !(await answers(`${base}/v1/models`)); i++) await new Promise((r) => setTimeout(r, 250));
      expect({ ready: await answers(`${base}/v1/models`), output: gone ? fleet.output() : '' }).toEqual({ ready: true, output: '' });

      const models = await (await fetch(`${base}/v1/models`)).json();
      expect(models.data.map((m: { id: string }) => m.id)).toEqual(['operator/custom']);
      // Probes and metrics: their own listener, PORT + 1000.
      expect(await answers(`http://127.0.0.1:${port + 1000}/readyz`)).toBe(true);
      expect((await fetch(`${base}/readyz`)).status).toBe(404);

      const admin = (p: string, body: unknown) =>
        fetch(`${base}${p}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }).then((r) => r.json());
      const account = await admin('/admin/v1/accounts', { credits: 1 });
      const key = await admin(`/admin/v1/accounts/${account.data.account_id}/keys`, { label: 'op' });
      const chat = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.data.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'operator/custom', messages: [{ role: 'user', content: 'fleet operator' }] }),
      });
      const reply = await chat.json();
      expect(chat.status).toBe(200);
      expect(reply.choices[0].message.content).toBe('pong');
      // 3 prompt and 1 completion tokens from the fake upstream: 0.003 + 0.002.
      expect(reply.usage.cost).toBe('0.005');
      expect(fake.requests.some((r) => r.body.messages?.[0]?.content === 'fleet operator' && r.model === 'ok')).toBe(true);
    } finally {
      process.kill(-fleet.child.pid!, 'SIGTERM');
    }
    expect(await fleet.exited).toBe(0);
    // Every service went with it: nothing answers on the edge or a service's port.
    expect(await answers(`${base}/v1/models`)).toBe(false);
    expect(await answers(`http://127.0.0.1:${port + 1001}/healthz`)).toBe(false);
    const c = new Client({ connectionString: PG_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
    await c.end();
  }, 120_000);

  it.each([
    ['BUS=memory', { BUS: 'memory' }, /BUS: "memory" cannot carry events between processes/],
    ['a PORT that is not a number', { PORT: 'eighty' }, /PORT/],
    ['a GATEWAY_PUBLIC_URL that is not a URL', { GATEWAY_PUBLIC_URL: 'gateway' }, /GATEWAY_PUBLIC_URL/],
    ['a LOG_LEVEL pino does not know', { LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    ['a FLEET_KAFKA_PORT that is not a port', { BUS: 'kafka', FLEET_KAFKA_PORT: 'ninety' }, /FLEET_KAFKA_PORT/],
  ])(
    'refuses %s with a message naming the variable, and exit status 1, before starting anything',
    async (_name, env, message) => {
      const fleet = runFleet(env);
      expect(await fleet.exited).toBe(1);
      expect(fleet.output()).toMatch(message);
      expect(fleet.output()).not.toMatch(/Fleet ready/);
    },
    30_000,
  );

  it('refuses a bad GATEWAY_CONFIG naming the field, and exit status 1', async () => {
    const file = path.join(dir, 'bad.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        providers: [{ id: 'p', kind: 'simulated' }],
        models: [
          {
            id: 'a/b',
            name: 'B',
            category: 'text',
            status: 'available',
            max_output_tokens: 10,
            pricing: { prompt: '0.1' },
            endpoints: [{ provider: 'p', model: 'm' }],
          },
        ],
      }),
    );
    const fleet = runFleet({ GATEWAY_CONFIG: file });
    expect(await fleet.exited).toBe(1);
    expect(fleet.output()).toMatch(/models\.0\.context_length: required for text models/);
  }, 30_000);
});
