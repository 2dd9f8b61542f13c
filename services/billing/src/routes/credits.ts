import type { Router } from 'express';
import type { Db } from '@gateway/db';
import { contextOf } from '@gateway/service-kit';
import { creditsRecord } from '../ledger/accounts';

/** GET /v1/credits: the calling account's balance. */
export function mountCredits(r: Router, db: Db): void {
  r.get('/v1/credits', async (req, res) => {
    res.json({ data: await creditsRecord(db, contextOf(req).accountId) });
  });
}
