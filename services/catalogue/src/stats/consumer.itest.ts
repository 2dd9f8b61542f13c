import { createMemoryBus } from '@gateway/bus';
import { openTestDb, type TestDb } from '@gateway/db/testing';
import { EVENT_TYPES, TOPICS, type UsageRecorded } from '@gateway/events';
import { createLogger } from '@gateway/service-kit';
import { migrations } from '../migrations';
import { consumeCatalogueEvents } from './consumer';
import { StatsStore } from './store';
import { UsageTally } from './usage-tally';

/**
 * The stats consumer over the embedded gateway's in-memory bus. That bus never delivers an event twice, but billing
 * announces a hold's usage more than once on purpose, under one id: a close that finds its hold already closed
 * publishes it again (for a durable bus whose first publish a crash lost), and a stream that outlived its hold is
 * announced at expiry, charged its last checkpoint, and again by its late close.
 */
describe('stats events over the in-memory bus', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb('pglite', 'catalogue', migrations);
  }, 60_000);
  afterAll(() => t?.close());

  it("counts a hold's tokens once when billing announces its usage twice", async () => {
    const bus = createMemoryBus();
    const logger = createLogger('test', 'silent');
    const store = new StatsStore(t.db);
    const tally = new UsageTally(store, logger, { maxPending: 1_000 });
    const taken: string[] = [];
    const add = tally.add.bind(tally);
    tally.add = (eventId, finishedAt, tokens) => {
      taken.push(eventId);
      add(eventId, finishedAt, tokens);
    };
    const sub = await consumeCatalogueEvents({ store, tally }, bus, logger);
    const finished = new Date('2025-08-10T12:00:00Z');
    const data: UsageRecorded = {
      hold_id: 'hold_twice',
      account_id: 'acct_1',
      request_id: 'req_twice',
      model: 'm/x',
      outcome: 'settle',
      charge_nano: '1000',
      status: 'succeeded',
      tokens_prompt: 30,
      tokens_completion: 12,
      finished_at: finished.toISOString(),
    };
    const announce = () => bus.publish(TOPICS.usage, { id: 'hold_twice:usage', type: EVENT_TYPES.usageRecorded, key: data.account_id, data });
    const takenAll = async (n: number) => {
      // The memory bus delivers after the publish returns.
      while (taken.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    await announce();
    await takenAll(1);
    await tally.flush();
    await announce();
    await announce();
    await takenAll(3);
    await tally.flush();
    expect(await store.tokens(finished)).toBe(42);
    await sub.close();
    await bus.close();
  });
});
