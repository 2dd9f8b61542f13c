import type { Router } from 'express';
import type { Db } from '@gateway/db';
import { contextOf } from '@gateway/service-kit';
import { keyRecord } from '../ledger/keys';
import type { RateLimit } from '../ledger/accounts';

/** GET /v1/key: the calling key. */
export function mountKey(r: Router, db: Db, defaultRate: RateLimit): void {
  r.get('/v1/key', async (req, res) => {
    res.json({ data: await keyRecord(db, contextOf(req).keyId, defaultRate) });
  });
}
