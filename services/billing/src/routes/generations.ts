import type { Router } from 'express';
import { z } from 'zod';
import type { Db } from '@gateway/db';
import { contextOf, validate } from '@gateway/service-kit';
import { generationView, listGenerations } from '../ledger/generation';
import { cursorParam, limitParam, pageOf, queryText } from '../paging';

const listQuery = z
  .object({
    model: queryText(200).min(1).optional(),
    limit: limitParam,
    cursor: cursorParam.optional(),
  })
  .passthrough();

/** GET /v1/generations: the calling account's generation records, newest first, in keyset pages like GET /v1/jobs. */
export function mountGenerations(r: Router, db: Db): void {
  r.get('/v1/generations', async (req, res) => {
    const q = validate(listQuery, req.query);
    const rows = await listGenerations(db, { accountId: contextOf(req).accountId, model: q.model, after: q.cursor, limit: q.limit + 1 });
    res.json(pageOf(rows, q.limit, generationView));
  });
}
