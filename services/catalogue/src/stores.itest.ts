import { describeOnEngines, openTestDb, type TestDb } from '@gateway/db/testing';
import { migrations } from './migrations';
import { StatsStore } from './stats/store';
import { UsageTally } from './stats/usage-tally';
import { StatusStore } from './status/store';

const DAY = 86_400_000;

/** The catalogue's SQL on both engines it runs on: PostgreSQL (fleet) and PGlite (embedded). */
describeOnEngines('catalogue stores', (engine) => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb(engine, 'catalogue', migrations);
  }, 60_000);
  afterAll(() => t?.close());

  it('stats: accounts once each, tokens once per event id, summed over the 30-day window', async () => {
    const s = new StatsStore(t.db);
    const now = new Date('2025-01-31T23:59:00Z');
    await Promise.all([s.accountOpened('a1', now.toISOString()), s.accountOpened('a1', now.toISOString()), s.accountOpened('a2', now.toISOString())]);
    expect(await s.accounts()).toBe(2);
    // Concurrent redeliveries of one event: exactly one applies.
    const applied = await Promise.all([1, 2, 3].map(() => s.usageRecorded('h1:usage', now, 50)));
    expect(applied.filter(Boolean)).toHaveLength(1);
    await s.usageRecorded('h2:usage', new Date(now.getTime() - 29 * DAY), 7);
    await s.usageRecorded('h3:usage', new Date(now.getTime() - 30 * DAY), 1_000);
    expect(await s.tokens(now)).toBe(57);
  });

  it('stats: a batch of usage events applies each id once, within the batch, across batches and beside single writes', async () => {
    const s = new StatsStore(t.db);
    const day = new Date('2025-03-10T12:00:00Z');
    const before = await s.tokens(day);
    const batch = [
      { eventId: 'b1:usage', finishedAt: day, tokens: 10 },
      { eventId: 'b1:usage', finishedAt: day, tokens: 10 },
      { eventId: 'b2:usage', finishedAt: new Date(day.getTime() - DAY), tokens: 5 },
      { eventId: 'b3:usage', finishedAt: day, tokens: 0 },
    ];
    expect(await s.usageRecordedMany(batch)).toBe(3);
    expect(await s.usageRecordedMany(batch)).toBe(0);
    expect(await s.usageRecorded('b2:usage', day, 5)).toBe(false);
    expect(await s.tokens(day)).toBe(before + 15);
  });

  it('stats: the tally writes what it was handed at its flush, and keeps a failed write for the next', async () => {
    const s = new StatsStore(t.db);
    const day = new Date('2025-04-10T12:00:00Z');
    const logged: unknown[] = [];
    const logger = { error: (o: unknown) => void logged.push(o) } as unknown as import('@gateway/service-kit').Logger;
    let fail = true;
    const flaky = Object.assign(Object.create(s), {
      usageRecordedMany: (events: Parameters<StatsStore['usageRecordedMany']>[0]) =>
        fail ? Promise.reject(new Error('database down')) : s.usageRecordedMany(events),
    }) as StatsStore;
    const tally = new UsageTally(flaky, logger, { maxPending: 1_000 });
    tally.add('t1:usage', day, 40);
    tally.add('t2:usage', day, 2);
    await tally.flush();
    expect(logged).toHaveLength(1);
    expect(await s.tokens(day)).toBe(0);
    fail = false;
    tally.add('t1:usage', day, 40);
    await tally.stop();
    expect(await s.tokens(day)).toBe(42);
  });

  it('status: one sample per component and slot, rolled up per UTC day; newest per component; reports keep the newest window', async () => {
    const s = new StatusStore(t.db);
    const at = new Date('2025-02-01T23:59:30Z');
    expect(await s.record({ component: 'api', at, outcome: 'ok', latencyMs: 5 }, 100)).toBe(true);
    // Another replica sampling the same slot records nothing.
    expect(await s.record({ component: 'api', at, outcome: 'down', latencyMs: 9 }, 100)).toBe(false);
    const next = new Date('2025-02-02T00:00:30Z');
    await s.record({ component: 'api', at: next, outcome: 'down', latencyMs: 7 }, 101);
    await s.record({ component: 'storage', at, outcome: 'degraded', latencyMs: 3 }, 100);
    const days = await s.days(next);
    expect(days.get('api')?.get('2025-02-01')).toEqual({ samples: 1, ok: 1, degraded: 0, down: 0 });
    expect(days.get('api')?.get('2025-02-02')).toEqual({ samples: 1, ok: 0, degraded: 0, down: 1 });
    expect(days.get('storage')?.get('2025-02-01')).toEqual({ samples: 1, ok: 0, degraded: 1, down: 0 });
    const latest = await s.latest();
    expect(latest.get('api')).toEqual({ component: 'api', at: next.toISOString(), outcome: 'down', latencyMs: 7 });

    const report = (end: string, failures: number) => ({
      source: 'text:1',
      window_start: '2025-02-02T00:00:00.000Z',
      window_end: end,
      endpoints: [{ endpoint: 'p/m', provider: 'p', attempts: 4, failures, latency_ms: 12, circuit: 'closed' as const }],
    });
    await s.saveReport(report('2025-02-02T00:01:00.000Z', 1));
    await s.saveReport(report('2025-02-02T00:00:30.000Z', 4)); // late and older: ignored
    const reports = await s.reportsSince(new Date('2025-02-02T00:00:00Z'));
    expect(reports).toEqual([expect.objectContaining({ source: 'text:1', endpoint: 'p/m', failures: 1, windowEnd: '2025-02-02T00:01:00.000Z' })]);

    // 91 days later every day of the roll-up has left the window.
    await s.prune(new Date(next.getTime() + 91 * DAY));
    expect((await s.days(new Date(next.getTime() + 91 * DAY))).size).toBe(0);
  });
});
