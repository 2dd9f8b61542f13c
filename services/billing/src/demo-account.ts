import type { Db } from '@gateway/db';
import { parseUsd } from '@gateway/money';
import { createAccount } from './ledger/accounts';
import { createKey } from './ledger/keys';

/** On the first embedded start (no account at all) a demo account with $10 and one key, so the API answers at once. */
export async function ensureDemoAccount(db: Db): Promise<{ accountId: string; key: string } | undefined> {
  const [{ n }] = await db.query<{ n: string | number }>('SELECT count(*)::int AS n FROM accounts');
  if (Number(n) > 0) return undefined;
  const accountId = await createAccount(db, parseUsd('10'), {}, { demo: true });
  const { key } = await createKey(db, accountId, { label: 'demo' });
  return { accountId, key };
}
