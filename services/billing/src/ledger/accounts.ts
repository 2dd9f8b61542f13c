import type { Db, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { toCents2 } from '@gateway/money';
import { newAccountId, newSecret } from './ids';

export interface RateLimit {
  requests: number;
  interval: string;
}

export interface AccountSettings {
  rate_limit?: RateLimit;
  job_concurrency?: number;
  suspended?: boolean;
}

export async function createAccount(db: Db, credits: bigint, settings: AccountSettings, opts: { demo?: boolean } = {}): Promise<string> {
  const id = newAccountId();
  await db.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO accounts (id, total_credits, rate_limit_requests, rate_limit_interval, job_concurrency, is_demo)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        id,
        credits.toString(),
        settings.rate_limit?.requests ?? null,
        settings.rate_limit?.interval ?? null,
        settings.job_concurrency ?? null,
        opts.demo ?? false,
      ],
    );
    if (credits !== 0n) await tx.query('INSERT INTO credit_entries (account_id, amount) VALUES ($1, $2)', [id, credits.toString()]);
  });
  return id;
}

export async function updateAccount(db: Db, id: string, s: AccountSettings): Promise<void> {
  const rows = await db.query(
    `UPDATE accounts SET
       rate_limit_requests = CASE WHEN $2::boolean THEN $3::integer ELSE rate_limit_requests END,
       rate_limit_interval = CASE WHEN $2::boolean THEN $4::text ELSE rate_limit_interval END,
       job_concurrency = COALESCE($5::integer, job_concurrency),
       suspended = COALESCE($6::boolean, suspended)
     WHERE id = $1 RETURNING id`,
    [id, s.rate_limit !== undefined, s.rate_limit?.requests ?? null, s.rate_limit?.interval ?? null, s.job_concurrency ?? null, s.suspended ?? null],
  );
  if (rows.length === 0) throw GatewayError.notFound(`Account ${id}`);
}

/** Adds (or, for a correction, removes) credits. A correction may not push `available` below zero. */
export async function addCredits(db: Db, id: string, amount: bigint): Promise<void> {
  await db.transaction(async (tx) => {
    const rows = await tx.query(
      `UPDATE accounts SET total_credits = total_credits + $2 WHERE id = $1 AND total_credits + $2 - total_usage - held >= 0 RETURNING id`,
      [id, amount.toString()],
    );
    if (rows.length === 0) {
      await requireAccount(tx, id);
      throw new GatewayError('invalid_request', 'This correction would leave the account with less than nothing available');
    }
    await tx.query('INSERT INTO credit_entries (account_id, amount) VALUES ($1, $2)', [id, amount.toString()]);
  });
}

async function requireAccount(q: Queryable, id: string) {
  const rows = await q.query('SELECT id FROM accounts WHERE id = $1', [id]);
  if (rows.length === 0) throw GatewayError.notFound(`Account ${id}`);
}

interface BalanceRow {
  total_credits: string | bigint;
  total_usage: string | bigint;
  held: string | bigint;
}

/** The spec's Credits record: two-decimal numbers, computed from exact nano amounts. */
export async function creditsRecord(db: Queryable, id: string) {
  const [row] = await db.query<BalanceRow & Record<string, unknown>>('SELECT total_credits, total_usage, held FROM accounts WHERE id = $1', [id]);
  if (!row) throw GatewayError.notFound(`Account ${id}`);
  const credits = BigInt(row.total_credits);
  const usage = BigInt(row.total_usage);
  const held = BigInt(row.held);
  return {
    total_credits: toCents2(credits),
    total_usage: toCents2(usage),
    balance: toCents2(credits - usage),
    held: toCents2(held),
    available: toCents2(credits - usage - held),
    // No overdraft is extended: spending stops at zero available.
    credit_limit: 0,
    currency: 'USD',
  };
}

export async function rotateWebhookSecret(db: Db, id: string): Promise<string> {
  const secret = newSecret();
  const rows = await db.query('UPDATE accounts SET webhook_secret = $2 WHERE id = $1 RETURNING id', [id, secret]);
  if (rows.length === 0) throw GatewayError.notFound(`Account ${id}`);
  return secret;
}
