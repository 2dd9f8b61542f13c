import type { Db } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { parseDuration } from '@gateway/config';
import { toCents2 } from '@gateway/money';
import type { KeyIdentity } from '@gateway/billing-client';
import { hashSecret, newApiKey, newKeyId } from './ids';
import type { RateLimit } from './accounts';

export async function createKey(
  db: Db,
  accountId: string,
  opts: { label?: string; limitNano?: bigint | null; expiresAt?: string | null },
): Promise<{ key: string; key_id: string }> {
  const key = newApiKey();
  const id = newKeyId();
  const rows = await db.query(
    `INSERT INTO api_keys (id, account_id, hash, label, spend_limit, expires_at)
     SELECT $1, id, $3, $4, $5, $6 FROM accounts WHERE id = $2 RETURNING id`,
    [id, accountId, hashSecret(key), opts.label ?? '', opts.limitNano?.toString() ?? null, opts.expiresAt ?? null],
  );
  if (rows.length === 0) throw GatewayError.notFound(`Account ${accountId}`);
  return { key, key_id: id };
}

export async function revokeKey(db: Db, keyId: string): Promise<void> {
  const rows = await db.query('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING id', [keyId]);
  if (rows.length === 0) throw GatewayError.notFound(`Key ${keyId}`);
}

interface KeyRow {
  id: string;
  account_id: string;
  rate_limit_requests: number | null;
  rate_limit_interval: string | null;
}

/** Unknown, revoked and expired keys all answer undefined: the caller says 401 without telling which. */
export async function verifyKey(db: Db, rawKey: string, defaultRate: RateLimit): Promise<KeyIdentity | undefined> {
  if (!rawKey.startsWith('sk_live_')) return undefined;
  const [row] = await db.query<KeyRow & Record<string, unknown>>(
    `UPDATE api_keys k SET last_used_at = now()
       FROM accounts a
      WHERE k.hash = $1 AND a.id = k.account_id AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
     RETURNING k.id, k.account_id, a.rate_limit_requests, a.rate_limit_interval`,
    [hashSecret(rawKey)],
  );
  if (!row) return undefined;
  const rate = rateOf(row, defaultRate);
  return { accountId: row.account_id, keyId: row.id, rateLimit: { requests: rate.requests, intervalMs: parseDuration(rate.interval) } };
}

function rateOf(row: { rate_limit_requests: number | null; rate_limit_interval: string | null }, fallback: RateLimit): RateLimit {
  return row.rate_limit_requests && row.rate_limit_interval ? { requests: row.rate_limit_requests, interval: row.rate_limit_interval } : fallback;
}

const iso = (v: unknown) => (v == null ? null : new Date(v as string).toISOString());

/** The spec's Key record for GET /v1/key. */
export async function keyRecord(db: Db, keyId: string, defaultRate: RateLimit) {
  const [row] = await db.query(
    `SELECT k.*, a.rate_limit_requests, a.rate_limit_interval FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = $1`,
    [keyId],
  );
  if (!row) throw GatewayError.notFound(`Key ${keyId}`);
  const limit = row.spend_limit == null ? null : BigInt(row.spend_limit as string);
  const usage = BigInt(row.usage as string);
  const held = BigInt(row.held as string);
  const room = limit == null ? null : limit - usage - held;
  return {
    label: row.label as string,
    limit: limit == null ? null : toCents2(limit),
    usage: toCents2(usage),
    // What new requests can still reserve: the cap less settled usage and open holds.
    limit_remaining: room == null ? null : toCents2(room > 0n ? room : 0n),
    is_provisioning_key: false,
    is_free_tier: false,
    rate_limit: rateOf(row as unknown as KeyRow, defaultRate),
    limit_reset: null,
    is_management_key: false,
    byok_usage: 0,
    key_id: row.id as string,
    account_id: row.account_id as string,
    created_at: iso(row.created_at),
    last_used_at: iso(row.last_used_at ?? row.created_at),
    expires_at: iso(row.expires_at),
  };
}
