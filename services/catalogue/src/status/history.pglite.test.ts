import type { Db } from '@gateway/db';
import { openServiceDb } from '@gateway/db';
import { createLogger } from '@gateway/service-kit';
import { migrations } from '../migrations';
import type { Measurement } from './checks';
import { StatusMonitor } from './monitor';
import { StatusStore } from './store';
import { statusBody } from './view';

const DAY = 86_400_000;

/** 90 simulated days through the real monitor and store (PGlite in memory), the clock injected. */
describe('status history', () => {
  let db: Db;
  beforeAll(async () => {
    db = await openServiceDb('catalogue', migrations, {});
  }, 60_000);
  afterAll(() => db?.close());

  it('has exactly 90 days, oldest first, the last today (UTC); days without samples are none with uptime null', async () => {
    const store = new StatusStore(db);
    let t = Date.parse('2025-03-01T10:00:00Z');
    const now = () => new Date(t);
    let outcome: Measurement['outcome'] = 'ok';
    const api = async (): Promise<Measurement> => ({ outcome, latencyMs: 12 });
    const monitor = new StatusMonitor({
      store,
      now,
      intervalMs: 3_600_000,
      logger: createLogger('test', 'silent'),
      checks: { api, providers: async () => undefined, storage: api, payments: api },
    });
    // 100 days: two samples a day, every 7th day skipped, the 50th day's second sample down.
    for (let day = 0; day < 100; day++) {
      if (day % 7 === 3) continue;
      for (const hour of [0, 12]) {
        t = Date.parse('2025-03-01T00:00:00Z') + day * DAY + hour * 3_600_000;
        outcome = day === 50 && hour === 12 ? 'down' : 'ok';
        await monitor.sampleOnce();
      }
    }
    const today = new Date(t);
    const body = statusBody(today, true, new Map([...monitor.latest]), await store.days(today));
    const api0 = body.components.find((c) => c.key === 'api');
    if (!api0) throw new Error('no api component');
    const h = api0.history;
    expect(h).toHaveLength(90);
    expect(h[89].date).toBe(today.toISOString().slice(0, 10));
    expect(h[0].date).toBe(new Date(t - 89 * DAY).toISOString().slice(0, 10));
    for (let i = 1; i < 90; i++) expect(Date.parse(h[i].date) - Date.parse(h[i - 1].date)).toBe(DAY);
    const skipped = h.filter((d) => d.sampleCount === 0);
    expect(skipped.length).toBeGreaterThan(10);
    for (const d of skipped) expect(d).toMatchObject({ state: 'none', uptime: null });
    const day50 = h.find((d) => d.date === new Date(Date.parse('2025-03-01T00:00:00Z') + 50 * DAY).toISOString().slice(0, 10));
    expect(day50).toEqual({ date: day50?.date, state: 'down', uptime: 0.5, sampleCount: 2 });
    expect(h.filter((d) => d.sampleCount === 2 && d !== day50).every((d) => d.state === 'operational' && d.uptime === 1)).toBe(true);
    // The window's uptime is a fraction of its samples, never a percentage.
    const samples = h.reduce((n, d) => n + d.sampleCount, 0);
    expect(api0.sampleCount).toBe(samples);
    expect(api0.uptime).toBeCloseTo((samples - 1) / samples, 10);
    expect(api0).toMatchObject({ status: 'OPERATIONAL', latencyMs: 12, checkedAt: today.toISOString() });
    // Nothing to measure: the component is UNCONFIGURED, with a full window of `none` days.
    const providers = body.components.find((c) => c.key === 'providers');
    expect(providers).toMatchObject({ status: 'UNCONFIGURED', uptime: null, sampleCount: 0, checkedAt: null });
    expect(providers?.history.every((d) => d.state === 'none')).toBe(true);
    expect(body).toMatchObject({ overall: 'OPERATIONAL', monitored: true, windowDays: 90 });
  }, 60_000);

  it('a switched-off monitor answers UNCONFIGURED and monitored false', () => {
    const body = statusBody(new Date(), false, new Map(), new Map());
    expect(body).toMatchObject({ overall: 'UNCONFIGURED', monitored: false });
    expect(body.components.map((c) => [c.key, c.status])).toEqual([
      ['api', 'UNCONFIGURED'],
      ['providers', 'UNCONFIGURED'],
      ['storage', 'UNCONFIGURED'],
      ['payments', 'UNCONFIGURED'],
    ]);
  });
});
