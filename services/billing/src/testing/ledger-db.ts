import type { Db } from '@gateway/db';
import { openTestDb, type Engine, type TestDb } from '@gateway/db/testing';
import { createLogger } from '@gateway/service-kit';
import { migrations } from '../migrations';
import { createLedger, type Ledger } from '../ledger/holds';
import { MemoryLedger } from '../ledger/memory/memory-ledger';

export interface LedgerSuite {
  db: Db;
  ledger: Ledger;
}

/**
 * Test suites only: billing's database on `engine` for the whole describe block (opened in beforeAll, dropped in
 * afterAll), with the ledger over it. The fields are filled in beforeAll, so read them inside tests only.
 * `memory` puts the embedded in-memory ledger over PGlite instead of the SQL one (see inMemoryView), telling
 * `onExpired` what its sweep expires.
 */
export function useLedgerDb(engine: Engine | 'memory', opts: { onExpired?: (holdIds: string[]) => Promise<void> } = {}): LedgerSuite {
  const suite = {} as LedgerSuite;
  let opened: TestDb | undefined;
  let memory: MemoryLedger | undefined;
  beforeAll(async () => {
    opened = await openTestDb(engine === 'memory' ? 'pglite' : engine, 'billing', migrations);
    if (engine === 'memory') {
      memory = await MemoryLedger.open({ db: opened.db, logger: createLogger('test', 'silent'), onExpired: opts.onExpired });
      suite.db = inMemoryView(opened.db, memory);
      suite.ledger = memory;
    } else {
      suite.db = opened.db;
      suite.ledger = createLedger(opened.db);
    }
  }, 60_000);
  afterAll(async () => {
    await memory?.stop();
    await opened?.close();
  });
  return suite;
}

/**
 * The tables as the embedded gateway's other code sees them beside the in-memory ledger: a read waits for the
 * write-behind; a write (the tests' own accounts, keys, suspensions) runs under `exclusive`, as the admin API's do.
 */
export function inMemoryView(db: Db, memory: MemoryLedger): Db {
  const isRead = (sql: string) => /^\s*(select|with)\b/i.test(sql);
  return {
    ...db,
    kind: db.kind,
    async query(sql, params) {
      if (isRead(sql)) {
        await memory.flushed();
        return db.query(sql, params);
      }
      return memory.exclusive(() => db.query(sql, params));
    },
    exec: (sql) => memory.exclusive(() => db.exec(sql)),
    transaction: (fn) => memory.exclusive(() => db.transaction(fn)),
  };
}
