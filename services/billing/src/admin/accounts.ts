import type { Db } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { formatUsd, toCents2 } from '@gateway/money';
import type { RateLimit } from '../ledger/accounts';
import { type PagePosition, positionSql } from '../paging';

/** What an account takes when its own row sets nothing: the config's `limits`. */
export interface AccountDefaults {
  rateLimit: RateLimit;
  jobConcurrency: number;
}

export interface AccountFilter {
  /** An account id prefix, a key id prefix, or a part of a key's label (any case). */
  search?: string;
  after?: PagePosition;
  limit: number;
}

// Named columns only, here and for keys: a key's hash (and the account's webhook secret) never leaves billing.
const ACCOUNT_COLUMNS = `a.id, a.created_at, a.suspended, a.total_credits::text AS total_credits, a.total_usage::text AS total_usage,
  a.held::text AS held, a.rate_limit_requests, a.rate_limit_interval, a.job_concurrency, ${positionSql('a.created_at')} AS page_at`;

/** `%` and `_` in what the operator typed are matched as themselves. */
const likeLiteral = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * The accounts, newest first, in keyset pages. A search scans: the admin API is an operator's, not a client's, and
 * a label is matched anywhere in it.
 */
export async function listAccounts(db: Db, f: AccountFilter): Promise<Array<Record<string, unknown> & { position: PagePosition }>> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (f.search !== undefined) {
    params.push(likeLiteral(f.search));
    const n = params.length;
    where.push(`(a.id LIKE $${n}::text || '%' OR EXISTS (SELECT 1 FROM api_keys k WHERE k.account_id = a.id
       AND (k.id LIKE $${n}::text || '%' OR k.label ILIKE '%' || $${n}::text || '%')))`);
  }
  if (f.after) {
    params.push(f.after.createdAt, f.after.id);
    where.push(`(a.created_at, a.id) < ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  params.push(f.limit);
  const rows = await db.query(
    `SELECT ${ACCOUNT_COLUMNS} FROM accounts a ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY a.created_at DESC, a.id DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map((r) => ({ ...r, position: { createdAt: r.page_at as string, id: r.id as string } }));
}

/** One account with its keys, newest key first. */
export async function accountDetail(db: Db, id: string, defaults: AccountDefaults) {
  const [row] = await db.query(`SELECT ${ACCOUNT_COLUMNS} FROM accounts a WHERE a.id = $1`, [id]);
  if (!row) throw GatewayError.notFound(`Account ${id}`);
  const keys = await db.query(
    `SELECT id, label, spend_limit::text AS spend_limit, usage::text AS usage, created_at, expires_at, revoked_at, last_used_at
       FROM api_keys WHERE account_id = $1 ORDER BY created_at DESC, id DESC`,
    [id],
  );
  return { ...accountView(defaults)(row), keys: keys.map(keyView) };
}

const iso = (v: unknown) => (v == null ? null : new Date(v as string).toISOString());

/**
 * An account row as the admin API shows it: money as two-decimal numbers, as the account routes show it, each
 * beside its exact figure (`_exact`, a decimal string, as the generation record's `cache_discount_exact`), which a
 * correction needs. Rate limit and job ceiling are what apply: the account's own, else the config's.
 */
export function accountView(defaults: AccountDefaults) {
  return (r: Record<string, unknown>) => {
    const credits = BigInt(r.total_credits as string);
    const usage = BigInt(r.total_usage as string);
    const held = BigInt(r.held as string);
    const available = credits - usage - held;
    const ownRate = r.rate_limit_requests != null && r.rate_limit_interval != null;
    return {
      account_id: r.id as string,
      created_at: iso(r.created_at),
      suspended: r.suspended === true,
      credits: toCents2(credits),
      usage: toCents2(usage),
      held: toCents2(held),
      available: toCents2(available),
      credits_exact: formatUsd(credits),
      usage_exact: formatUsd(usage),
      held_exact: formatUsd(held),
      available_exact: formatUsd(available),
      rate_limit: ownRate ? { requests: Number(r.rate_limit_requests), interval: r.rate_limit_interval as string } : defaults.rateLimit,
      job_concurrency: r.job_concurrency == null ? defaults.jobConcurrency : Number(r.job_concurrency),
    };
  };
}

function keyView(k: Record<string, unknown>) {
  const limit = k.spend_limit == null ? null : BigInt(k.spend_limit as string);
  const usage = BigInt(k.usage as string);
  return {
    key_id: k.id as string,
    label: k.label as string,
    limit: limit == null ? null : toCents2(limit),
    usage: toCents2(usage),
    limit_exact: limit == null ? null : formatUsd(limit),
    usage_exact: formatUsd(usage),
    created_at: iso(k.created_at),
    expires_at: iso(k.expires_at),
    revoked: k.revoked_at != null,
    revoked_at: iso(k.revoked_at),
    last_used_at: iso(k.last_used_at),
  };
}
