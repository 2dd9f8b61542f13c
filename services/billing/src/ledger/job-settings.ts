import type { JobSettings } from '@gateway/billing-client';
import type { Db } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { newSecret } from './ids';

/**
 * The account's job ceiling and webhook secret. Accounts made before webhooks existed have no secret; the first
 * need creates one in one statement (COALESCE keeps whichever a concurrent caller wrote first), so every delivery
 * of an account is signed with the same secret until the admin API rotates it.
 */
export async function jobSettings(db: Db, accountId: string): Promise<JobSettings> {
  const rows = await db.query<{ job_concurrency: number | null; webhook_secret: string }>(
    `UPDATE accounts SET webhook_secret = COALESCE(webhook_secret, $2) WHERE id = $1 RETURNING job_concurrency, webhook_secret`,
    [accountId, newSecret()],
  );
  if (rows.length === 0) throw GatewayError.notFound(`Account ${accountId}`);
  return { jobConcurrency: rows[0].job_concurrency, webhookSecret: rows[0].webhook_secret };
}
