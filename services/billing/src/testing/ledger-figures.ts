import type { Db } from '@gateway/db';
import type { Payer } from './ledger-fixtures';

/** What the ledger says about a payer, in nano-USD strings: the account's figures and its key's own. */
export async function figures(db: Db, who: Payer) {
  const [account] = await db.query<{ usage: string; held: string; available: string }>(
    `SELECT total_usage::text AS usage, held::text AS held, (total_credits - total_usage - held)::text AS available FROM accounts WHERE id = $1`,
    [who.accountId],
  );
  const [key] = await db.query<{ usage: string; held: string }>('SELECT usage::text AS usage, held::text AS held FROM api_keys WHERE id = $1', [
    who.keyId,
  ]);
  return { account, key };
}

export async function holdRow(db: Db, holdId: string) {
  const [h] = await db.query<{ state: string; charge: string; closed: boolean }>(
    'SELECT state, charge::text AS charge, closed_at IS NOT NULL AS closed FROM holds WHERE id = $1',
    [holdId],
  );
  return h;
}

/** The sweeper compares expiries with the database's clock, so a test waits on that clock, not on its own. */
export async function pastExpiry(db: Db, holdId: string): Promise<boolean> {
  const [r] = await db.query<{ past: boolean }>('SELECT clock_timestamp() > expires_at AS past FROM holds WHERE id = $1', [holdId]);
  return r.past;
}

export async function usageRecordsOf(db: Db, requestId: string) {
  return db.query<{ status: string; error_code: string | null; total_cost: string }>(
    'SELECT status, error_code, total_cost::text AS total_cost FROM usage_records WHERE request_id = $1',
    [requestId],
  );
}

/**
 * MONEY.md's invariants, on every account and key of the database: held is the sum of open holds, usage the sum of
 * the charges taken, available never negative, the usage records sum to the usage, and every settled hold has its
 * record. Key figures count too: a key's cap is only as good as its own usage and held.
 */
export async function expectLedgerInvariants(db: Db): Promise<void> {
  const accounts = await db.query(`
    SELECT a.id, a.held::text AS held, a.total_usage::text AS usage, (a.total_credits - a.total_usage - a.held) >= 0 AS available_ok,
      COALESCE((SELECT sum(amount) FROM holds h WHERE h.account_id = a.id AND h.state = 'open'), 0)::text AS open_holds,
      COALESCE((SELECT sum(charge) FROM holds h WHERE h.account_id = a.id), 0)::text AS charges,
      COALESCE((SELECT sum(total_cost) FROM usage_records u WHERE u.account_id = a.id), 0)::text AS recorded
    FROM accounts a`);
  for (const a of accounts) {
    expect({ id: a.id, held: a.held, usage: a.usage, recorded: a.recorded, availableOk: a.available_ok }).toEqual({
      id: a.id,
      held: a.open_holds,
      usage: a.charges,
      recorded: a.charges,
      availableOk: true,
    });
  }
  const keys = await db.query(`
    SELECT k.id, k.held::text AS held, k.usage::text AS usage,
      COALESCE((SELECT sum(amount) FROM holds h WHERE h.key_id = k.id AND h.state = 'open'), 0)::text AS open_holds,
      COALESCE((SELECT sum(charge) FROM holds h WHERE h.key_id = k.id), 0)::text AS charges
    FROM api_keys k`);
  for (const k of keys) expect({ id: k.id, held: k.held, usage: k.usage }).toEqual({ id: k.id, held: k.open_holds, usage: k.charges });
  expect(
    await db.query(`SELECT h.id FROM holds h LEFT JOIN usage_records u ON u.hold_id = h.id WHERE h.state = 'settled' AND u.request_id IS NULL`),
  ).toEqual([]);
  // What foreign keys would say, and more (docs/decisions/009): every hold names a key of its own account, and every
  // usage record the hold it was written for, of the same account and request.
  expect(
    await db.query(`SELECT h.id FROM holds h LEFT JOIN api_keys k ON k.id = h.key_id AND k.account_id = h.account_id WHERE k.id IS NULL`),
  ).toEqual([]);
  expect(
    await db.query(`SELECT u.request_id FROM usage_records u LEFT JOIN holds h ON h.id = u.hold_id
                     WHERE u.hold_id IS NOT NULL AND (h.id IS NULL OR h.account_id <> u.account_id OR h.request_id <> u.request_id)
                    UNION ALL
                    SELECT u.request_id FROM usage_records u LEFT JOIN accounts a ON a.id = u.account_id WHERE a.id IS NULL`),
  ).toEqual([]);
}
