import { openTestDb, type TestDb } from '@gateway/db/testing';
import { createLogger } from '@gateway/service-kit';
import { migrations } from '../../migrations';
import { inMemoryView } from '../../testing/ledger-db';
import { expectLedgerInvariants } from '../../testing/ledger-figures';
import { payer, placeHold } from '../../testing/ledger-fixtures';
import { MemoryLedger } from './memory-ledger';

/** Issue 31, item 1: an exclusive change can keep the ledger still only for a bounded time. */
describe('the in-memory ledger’s exclusive section', () => {
  let t: TestDb;
  beforeEach(async () => {
    t = await openTestDb('pglite', 'billing', migrations);
  }, 60_000);
  afterEach(async () => {
    await expectLedgerInvariants(t.db);
    await t.close();
  });

  it('refuses, retryably and within its wait, a change queued behind one that does not finish, and the ledger goes on', async () => {
    const m = await MemoryLedger.open({ db: t.db, logger: createLogger('test', 'silent') });
    const a = await payer(inMemoryView(t.db, m), '1');
    let release!: () => void;
    const stuck = m.exclusive(() => new Promise<void>((r) => (release = r)));
    await expect(m.exclusive(async () => 'ran', 100)).rejects.toMatchObject({ code: 'upstream_unavailable', status: 503 });
    await expect(m.flushedWithin(5_000)).resolves.toBeUndefined();
    release();
    await stuck;
    await expect(m.exclusive(async () => 'ran', 100)).resolves.toBe('ran');
    expect((await placeHold(m, a, '0.1')).amountNano).toBe(100_000_000n);
    await m.stop();
  });
});
