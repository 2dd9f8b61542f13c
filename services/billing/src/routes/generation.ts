import type { Router } from 'express';
import { z } from 'zod';
import type { Db } from '@gateway/db';
import { contextOf, validate } from '@gateway/service-kit';
import { generationRecord } from '../ledger/generation';

const query = z.object({ id: z.string().min(1, 'id is required').max(100) });

/** GET /v1/generation?id=req_...: what one request cost. */
export function mountGeneration(r: Router, db: Db): void {
  r.get('/v1/generation', async (req, res) => {
    const { id } = validate(query, req.query);
    res.json({ data: await generationRecord(db, contextOf(req).accountId, id) });
  });
}
