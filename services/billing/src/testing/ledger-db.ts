import type { Db } from '@gateway/db';
import { openTestDb, type Engine, type TestDb } from '@gateway/db/src/testing/temp-db';
import { migrations } from '../migrations';
import { createLedger, type Ledger } from '../ledger/holds';

export interface LedgerSuite {
  db: Db;
  ledger: Ledger;
}

/**
 * Test suites only: billing's database on `engine` for the whole describe block (opened in beforeAll, dropped in
 * afterAll), with the ledger over it. The fields are filled in beforeAll, so read them inside tests only.
 */
export function useLedgerDb(engine: Engine): LedgerSuite {
  const suite = {} as LedgerSuite;
  let opened: TestDb | undefined;
  beforeAll(async () => {
    opened = await openTestDb(engine, 'billing', migrations);
    suite.db = opened.db;
    suite.ledger = createLedger(opened.db);
  }, 60_000);
  afterAll(async () => {
    await opened?.close();
  });
  return suite;
}
