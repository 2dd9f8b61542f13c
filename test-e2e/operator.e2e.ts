import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { waitFor, runEntry } from '@gateway/testing';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';

/** The operator contract (spec/operations.md) at the process level: exit codes, start-up messages, SIGTERM. */
const run = (env: Record<string, string>) => runEntry('services/gateway/src/main.ts', env);

/**
 * The URL the gateway says it listens on, once it answers there. It is started on PORT=0, so the system picks a
 * free port at the moment of listening: nothing can take it between a check and the use.
 */
async function waitListening(p: ReturnType<typeof run>): Promise<string> {
  let gone = false;
  void p.exited.then(() => (gone = true));
  let url = '';
  await waitFor(
    () => {
      if (gone) throw new Error(`the gateway exited before it listened:\n${p.output()}`);
      url = /listening on (http:\/\/[\w.:]+)/.exec(p.output())?.[1] ?? '';
      return url !== '';
    },
    'the gateway to say where it listens',
    // A fresh data directory boots one PGlite per service: seconds alone, far more beside the rest of the suite.
    90_000,
  );
  await waitFor(async () => (await fetch(`${url}/v1/models`).catch(() => undefined))?.ok === true, `the gateway to answer at ${url}`, 30_000);
  return url;
}

describe('operator contract', () => {
  let dir: string;
  let fake: FakeUpstream;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-operator-'));
    fake = await startFakeOpenAI();
  });
  afterAll(async () => {
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a bad config file with a message naming the field, and exit status 1', async () => {
    const file = path.join(dir, 'bad.yaml');
    fs.writeFileSync(
      file,
      'providers:\n  - id: p\n    kind: simulated\nmodels:\n  - id: a/b\n    name: B\n    category: text\n    status: available\n    max_output_tokens: 10\n    pricing: { prompt: 0.1 }\n    endpoints: [{ provider: p, model: m }]\n',
    );
    const p = run({ PORT: '0', GATEWAY_CONFIG: file, GATEWAY_DATA_DIR: path.join(dir, 'd1') });
    expect(await p.exited).toBe(1);
    expect(p.output()).toMatch(/models\.0\.pricing\.prompt/);
  });

  it('refuses a bad environment variable with its name, and exit status 1', async () => {
    const p = run({ PORT: 'eighty', GATEWAY_DATA_DIR: path.join(dir, 'd2') });
    expect(await p.exited).toBe(1);
    expect(p.output()).toMatch(/PORT/);
  });

  it('prints the demo key and admin token once, then drains an in-flight stream on SIGTERM and exits 0', async () => {
    const config = path.join(dir, 'ok.json');
    fs.writeFileSync(
      config,
      JSON.stringify({
        providers: [{ id: 'fake', kind: 'openai', base_url: fake.url, timeout_ms: 5000 }],
        models: [
          {
            id: 'op/slow',
            name: 'Slow',
            category: 'text',
            status: 'available',
            context_length: 4096,
            max_output_tokens: 50,
            pricing: { prompt: '0.001', completion: '0.002' },
            endpoints: [{ provider: 'fake', model: 'slow-1500' }],
          },
        ],
      }),
    );
    const env = { PORT: '0', GATEWAY_CONFIG: config, GATEWAY_DATA_DIR: path.join(dir, 'd3') };
    const first = run(env);
    const url = await waitListening(first);
    const key = /Demo API key[^:]*: (sk_live_\w+)/.exec(first.output())?.[1];
    expect(key).toBeDefined();
    expect(first.output()).toMatch(/Admin token \(generated, shown once, keep it\): gwadm_\w+/);

    // A request the upstream answers only after 1.5 s, then SIGTERM while it is in flight.
    const pending = fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'op/slow', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    await fake.received((q) => q.model === 'slow-1500', 'the in-flight request');
    first.child.kill('SIGTERM');
    const res = await pending;
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"cost":"0.005"');
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
    expect(await first.exited).toBe(0);

    // Restarted on the same data: nothing printed again, the key still works, and the drained request was settled.
    const second = run(env);
    const again = await waitListening(second);
    expect(second.output()).not.toMatch(/Demo API key|Admin token/);
    const credits = await (await fetch(`${again}/v1/credits`, { headers: { authorization: `Bearer ${key}` } })).json();
    expect(credits.data).toMatchObject({ total_usage: 0.01, held: 0 });
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 240_000);
});
