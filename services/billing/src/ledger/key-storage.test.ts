import type { Db } from '@gateway/db';
import { hashSecret } from './ids';
import { createKey, verifyKey } from './keys';

/** Every statement a ledger function sends, with its parameters: what the database ever sees of a key. */
function recordingDb(answer: Record<string, unknown>[]) {
  const sent: { sql: string; params: unknown[] }[] = [];
  const db = {
    kind: 'pg',
    async query(sql: string, params: unknown[] = []) {
      sent.push({ sql, params });
      return answer;
    },
  } as unknown as Db;
  return { db, sent };
}

const RATE = { requests: 10, interval: '60s' };

describe('API keys at rest and on lookup', () => {
  it('createKey stores the SHA-256 of the key, never the key; the key is answered once, to the caller', async () => {
    const { db, sent } = recordingDb([{ id: 'k' }]);
    const { key } = await createKey(db, 'acct_1', { label: 'ci' });
    expect(key).toMatch(/^sk_live_[0-9A-Za-z]{48}$/);
    expect(sent).toHaveLength(1);
    expect(sent[0].sql).toMatch(/INSERT INTO api_keys \(id, account_id, hash,/);
    expect(sent[0].params).toContain(hashSecret(key));
    expect(JSON.stringify(sent)).not.toContain(key);
    expect(JSON.stringify(sent)).not.toContain(key.slice('sk_live_'.length));
  });

  it('verifyKey finds a key by its digest (one index probe on api_keys.hash): the presented key is never compared as such, nor sent', async () => {
    const { db, sent } = recordingDb([{ id: 'k', account_id: 'acct_1', rate_limit_requests: null, rate_limit_interval: null }]);
    const key = `sk_live_${'a'.repeat(48)}`;
    expect(await verifyKey(db, key, RATE)).toMatchObject({ accountId: 'acct_1', keyId: 'k' });
    expect(sent).toHaveLength(1);
    expect(sent[0].sql).toMatch(/WHERE k\.hash = \$1 /);
    expect(sent[0].params).toEqual([hashSecret(key)]);
    expect(JSON.stringify(sent)).not.toContain(key);
  });

  it('verifyKey asks nothing for what is not shaped like a key (the admin token included)', async () => {
    const { db, sent } = recordingDb([]);
    for (const raw of ['gwadm_0123456789', '', 'Bearer sk_live_x', 'SK_LIVE_abc']) expect(await verifyKey(db, raw, RATE)).toBeUndefined();
    expect(sent).toEqual([]);
  });
});
