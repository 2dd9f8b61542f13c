import crypto from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Db } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { hashSecret, newAdminToken } from '../ledger/ids';

/**
 * The admin token is GATEWAY_ADMIN_TOKEN when set; otherwise one is generated on first start, stored hashed,
 * and returned here exactly once so the caller can print it. Replicas racing at first start agree on one.
 */
export async function resolveAdminToken(db: Db, fromEnv: string | undefined): Promise<{ hash: string; generated?: string }> {
  if (fromEnv) return { hash: hashSecret(fromEnv) };
  const candidate = newAdminToken();
  const inserted = await db.query(
    `INSERT INTO settings (name, value) VALUES ('admin_token_sha256', $1) ON CONFLICT (name) DO NOTHING RETURNING name`,
    [hashSecret(candidate)],
  );
  if (inserted.length > 0) return { hash: hashSecret(candidate), generated: candidate };
  const [row] = await db.query<{ value: string }>(`SELECT value FROM settings WHERE name = 'admin_token_sha256'`);
  return { hash: row.value };
}

export function requireAdmin(tokenHash: string): RequestHandler {
  const expected = Buffer.from(tokenHash, 'hex');
  return (req, _res, next) => {
    const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
    const given = m ? Buffer.from(hashSecret(m[1].trim()), 'hex') : undefined;
    if (given && crypto.timingSafeEqual(given, expected)) return next();
    next(new GatewayError('invalid_api_key', 'Admin API: missing or wrong admin token'));
  };
}
