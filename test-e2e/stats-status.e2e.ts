import OpenAI from 'openai';
import { startGateway, type Mode, type TestGateway, isFleet, REPLICATED_FLEET, startTimeout } from './support/harness';

/** Short intervals so a test sees samples and fresh stats; the contract's five minutes is the default (stats.cache_ttl). */
const config = {
  providers: [
    { id: 'sim', kind: 'simulated' },
    { id: 'sim-b', kind: 'simulated' },
  ],
  models: [
    {
      id: 'st/chat',
      name: 'Chat',
      category: 'text',
      status: 'available',
      context_length: 8192,
      max_output_tokens: 256,
      pricing: { prompt: '0.000001', completion: '0.000002' },
      endpoints: [{ provider: 'sim', model: 's' }],
    },
    {
      id: 'st/later',
      name: 'Later',
      category: 'text',
      status: 'coming_soon',
      context_length: 8192,
      max_output_tokens: 256,
      pricing: { prompt: '0.000001' },
      endpoints: [{ provider: 'sim-b', model: 's' }],
    },
  ],
  stats: { cache_ttl: '1s' },
  status: { sample_interval: '1s' },
};

const DATE = /^\d{4}-\d\d-\d\d$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.each(['embedded', REPLICATED_FLEET] as Mode[])('GET /v1/stats and /v1/status through the %s gateway', (mode) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway(mode, config);
  }, startTimeout(mode));
  afterAll(async () => {
    await gw?.stop();
  });
  const get = async (p: string) => {
    const r = await fetch(`${gw.url}${p}`);
    return { status: r.status, headers: r.headers, json: await r.json() };
  };

  it('stats count accounts and the tokens of real chat calls; providers and models from the config', async () => {
    const before = (await get('/v1/stats')).json;
    expect(before).toEqual({
      accounts: expect.any(Number),
      tokens: expect.any(Number),
      providers: 1,
      models: 1,
      generatedAt: expect.stringMatching(ISO),
    });
    const { key } = await gw.account(5);
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    let used = 0;
    for (let i = 0; i < 2; i++) {
      const reply = await client.chat.completions.create({ model: 'st/chat', messages: [{ role: 'user', content: `Hello ${i}` }] });
      used += (reply.usage?.prompt_tokens ?? 0) + (reply.usage?.completion_tokens ?? 0);
    }
    expect(used).toBeGreaterThan(0);
    const after = await until('the usage to be counted', async () => {
      const s = (await get('/v1/stats')).json;
      return s.tokens >= before.tokens + used && s.accounts >= before.accounts + 1 ? s : undefined;
    });
    expect(after.tokens).toBe(before.tokens + used);
  }, 60_000);

  it('status: four components, each with 90 days of history ending today (UTC), measured', async () => {
    const body = await until('every component to be measured', async () => {
      const r = await get('/v1/status');
      expect(r.status).toBe(200);
      // The fleet's first samples may find the edge or billing not yet listening: wait for a round with all up.
      return r.json.components.every((c: { sampleCount: number; status: string }) => c.sampleCount > 0 && c.status === 'OPERATIONAL')
        ? r.json
        : undefined;
    });
    expect(body).toMatchObject({ overall: 'OPERATIONAL', monitored: true, windowDays: 90, generatedAt: expect.stringMatching(ISO) });
    expect(body.components.map((c: { key: string }) => c.key)).toEqual(['api', 'providers', 'storage', 'payments']);
    const today = new Date().toISOString().slice(0, 10);
    for (const c of body.components) {
      expect(c).toEqual({
        key: c.key,
        name: expect.any(String),
        description: expect.any(String),
        status: 'OPERATIONAL',
        uptime: expect.any(Number),
        latencyMs: expect.any(Number),
        latencyMeaning: expect.any(String),
        sampleCount: expect.any(Number),
        checkedAt: expect.stringMatching(ISO),
        history: expect.any(Array),
      });
      expect(c.uptime).toBeGreaterThanOrEqual(0);
      expect(c.uptime).toBeLessThanOrEqual(1);
      expect(Number.isInteger(c.latencyMs)).toBe(true);
      expect(c.history).toHaveLength(90);
      expect(c.history[89]).toMatchObject({ date: today, sampleCount: expect.any(Number) });
      expect(c.history[89].sampleCount).toBeGreaterThan(0);
      expect(['operational', 'degraded', 'down']).toContain(c.history[89].state);
      expect(c.history[0]).toEqual({ date: expect.stringMatching(DATE), state: 'none', uptime: null, sampleCount: 0 });
    }
  }, 60_000);

  if (isFleet(mode)) {
    it('with billing stopped, /v1/status still answers 200 and payments is not operational', async () => {
      await gw.killService?.('billing');
      const body = await until('payments to be measured down', async () => {
        const r = await get('/v1/status');
        expect(r.status).toBe(200);
        const payments = r.json.components.find((c: { key: string }) => c.key === 'payments');
        return payments.status !== 'OPERATIONAL' ? r.json : undefined;
      });
      expect(body.components.find((c: { key: string }) => c.key === 'payments').status).toBe('DOWN');
      expect(body.overall).toBe('DEGRADED');
    }, 60_000);
  }
});
