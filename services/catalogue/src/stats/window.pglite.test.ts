import type { Db } from '@gateway/db';
import { openServiceDb } from '@gateway/db';
import { migrations } from '../migrations';
import { StatsStore } from './store';

const DAY = 86_400_000;

/** The 30-day token window on PGlite in memory, with an injected "now". */
describe('stats tokens window', () => {
  let db: Db;
  beforeAll(async () => {
    db = await openServiceDb('catalogue', migrations, {});
  }, 60_000);
  afterAll(() => db?.close());

  it('sums today and the 29 days before it; day 31 is out; a redelivered event counts once', async () => {
    const store = new StatsStore(db);
    const now = new Date('2025-06-30T08:00:00Z');
    const ago = (days: number) => new Date(now.getTime() - days * DAY);
    expect(await store.usageRecorded('h1:usage', ago(0), 100)).toBe(true);
    expect(await store.usageRecorded('h1:usage', ago(0), 100)).toBe(false);
    await store.usageRecorded('h2:usage', ago(29), 20);
    await store.usageRecorded('h3:usage', ago(30), 5_000);
    await store.usageRecorded('h4:usage', ago(45), 7_000);
    expect(await store.tokens(now)).toBe(120);
    // A day later, day 29 has become day 30 and drops out.
    expect(await store.tokens(ago(-1))).toBe(100);
    await store.accountOpened('acc_1', now.toISOString());
    await store.accountOpened('acc_1', now.toISOString());
    await store.accountOpened('acc_2', now.toISOString());
    expect(await store.accounts()).toBe(2);
    await store.prune(now);
    expect(await store.tokens(now)).toBe(120);
  });
});
