/**
 * The ledger under test, and the operator's and sweeper's levers beside it. The ledger comes from a factory
 * `(db) => Ledger` (sqlHarness's second argument), so another implementation of the Ledger interface runs the same
 * properties by changing that one argument. Top-ups, key caps, the sweeper and the reads go through the database,
 * the way the admin API and billing's sweeper reach them.
 */
import type { Db } from '@gateway/db';
import { addCredits, createAccount } from '../../ledger/accounts';
import { expireHolds, type Ledger } from '../../ledger/holds';
import { createKey } from '../../ledger/keys';
import type { HoldState, Snapshot } from './model';

/** What the properties need of a ledger: its two writes, and the operator's and sweeper's levers beside them. */
export interface LedgerHarness {
  ledger: Ledger;
  openAccount(credits: bigint): Promise<string>;
  openKey(accountId: string, cap: bigint | null): Promise<string>;
  /** The admin top-up (a negative amount is a correction). */
  credit(accountId: string, amount: bigint): Promise<void>;
  /** Sets, raises, lowers or removes a key's spend limit (the admin API has no route for it yet). */
  setCap(keyId: string, cap: bigint | null): Promise<void>;
  /** One sweep of expired holds; how many it expired (undefined: the ledger does not say). */
  sweep(): Promise<number | undefined>;
  snapshot(accountIds: string[]): Promise<Snapshot>;
  /** How many holds of the whole database are expired (sweeps may also expire other runs' leftovers). */
  expiredTotal(): Promise<number>;
  /** Whether every one of these holds is past its expiry on the database's clock (what the sweeper reads). */
  pastExpiry(holdIds: string[]): Promise<boolean>;
}

const big = (v: unknown) => BigInt(v as string);

/**
 * The harness over billing's database, with the ledger made by `makeLedger`. A ledger that keeps its figures
 * elsewhere (in memory, written behind) brings its own sweep, and a `db` whose reads see every decision made so far.
 */
export function sqlHarness(db: Db, makeLedger: (db: Db) => Ledger, opts: { sweep?: () => Promise<number | undefined> } = {}): LedgerHarness {
  return {
    ledger: makeLedger(db),
    openAccount: (credits) => createAccount(db, credits, {}),
    openKey: async (accountId, cap) => (await createKey(db, accountId, { limitNano: cap })).key_id,
    credit: (accountId, amount) => addCredits(db, accountId, amount),
    async setCap(keyId, cap) {
      const rows = await db.query('UPDATE api_keys SET spend_limit = $2 WHERE id = $1 RETURNING id', [keyId, cap?.toString() ?? null]);
      if (rows.length !== 1) throw new Error(`setCap: no key ${keyId}`);
    },
    sweep: opts.sweep ?? (() => expireHolds(db)),
    async snapshot(accountIds) {
      const ids = JSON.stringify(accountIds);
      const mine = 'IN (SELECT jsonb_array_elements_text($1::jsonb))';
      const accounts = await db.query(
        `
        SELECT a.id, a.total_credits::text AS credits, a.total_usage::text AS usage, a.held::text AS held,
          COALESCE((SELECT sum(c.amount) FROM credit_entries c WHERE c.account_id = a.id), 0)::text AS entries,
          COALESCE((SELECT sum(u.total_cost) FROM usage_records u WHERE u.account_id = a.id), 0)::text AS recorded
        FROM accounts a WHERE a.id ${mine}`,
        [ids],
      );
      const keys = await db.query(
        `SELECT id, account_id, spend_limit::text AS cap, usage::text AS usage, held::text AS held FROM api_keys WHERE account_id ${mine}`,
        [ids],
      );
      const holds = await db.query(
        `SELECT h.id, h.account_id, h.key_id, h.request_id, h.idempotency_key, h.amount::text AS amount, h.state, h.charge::text AS charge,
           h.closed_at IS NOT NULL AS closed, (SELECT c.charge::text FROM hold_checkpoints c WHERE c.hold_id = h.id) AS checkpoint,
           u.request_id IS NOT NULL AS has_record, u.hold_id AS record_hold,
           u.total_cost::text AS record_cost, u.status AS record_status, u.error_code AS record_error
         FROM holds h LEFT JOIN usage_records u ON u.request_id = h.request_id WHERE h.account_id ${mine}`,
        [ids],
      );
      return {
        accounts: new Map(
          accounts.map((a) => [
            a.id as string,
            { credits: big(a.credits), usage: big(a.usage), held: big(a.held), entries: big(a.entries), recorded: big(a.recorded) },
          ]),
        ),
        keys: new Map(
          keys.map((k) => [
            k.id as string,
            { account: k.account_id as string, cap: k.cap == null ? null : big(k.cap), usage: big(k.usage), held: big(k.held) },
          ]),
        ),
        holds: new Map(
          holds.map((h) => [
            h.id as string,
            {
              account: h.account_id as string,
              key: h.key_id as string,
              request: h.request_id as string,
              idem: (h.idempotency_key as string | null) ?? null,
              amount: big(h.amount),
              state: h.state as HoldState,
              charge: big(h.charge),
              closed: h.closed as boolean,
              checkpoint: h.checkpoint == null ? null : big(h.checkpoint),
              record: h.has_record
                ? {
                    holdId: (h.record_hold as string | null) ?? null,
                    cost: big(h.record_cost),
                    status: h.record_status as string,
                    errorCode: (h.record_error as string | null) ?? null,
                  }
                : null,
            },
          ]),
        ),
      };
    },
    async expiredTotal() {
      const [r] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM holds WHERE state = 'expired'`);
      return Number(r.n);
    },
    async pastExpiry(holdIds) {
      if (holdIds.length === 0) return true;
      const [r] = await db.query<{ due: boolean }>(
        `SELECT COALESCE(bool_and(clock_timestamp() > expires_at), true) AS due FROM holds WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))`,
        [JSON.stringify(holdIds)],
      );
      return r.due;
    },
  };
}
