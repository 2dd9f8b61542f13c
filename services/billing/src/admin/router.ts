import { Router } from 'express';
import type { Db } from '@gateway/db';
import { parseUsd } from '@gateway/money';
import { jsonBody, validate } from '@gateway/service-kit';
import { addCredits, createAccount, creditsRecord, rotateWebhookSecret, updateAccount } from '../ledger/accounts';
import { createKey, revokeKey } from '../ledger/keys';
import { requireAdmin } from './auth';
import { createAccountBody, createKeyBody, creditsBody, patchAccountBody } from './schemas';

/** The operator's admin API (spec/operations.md), mounted at /admin/v1. */
export function adminRouter(
  db: Db,
  adminTokenHash: string,
  onKeyRevoked: (keyId: string) => void,
  /** Told after an account is created (billing announces it on the bus); must not throw. */
  onAccountOpened: (accountId: string) => void = () => {},
): Router {
  const r = Router();
  r.use(requireAdmin(adminTokenHash));
  r.use(jsonBody('64kb'));

  r.post('/accounts', async (req, res) => {
    const body = validate(createAccountBody, req.body ?? {});
    const id = await createAccount(db, parseUsd(body.credits ?? 0), body);
    onAccountOpened(id);
    res.status(201).json({ data: { account_id: id } });
  });

  r.get('/accounts/:id', async (req, res) => {
    res.json({ data: { account_id: req.params.id, ...(await creditsRecord(db, req.params.id)) } });
  });

  r.patch('/accounts/:id', async (req, res) => {
    await updateAccount(db, req.params.id, validate(patchAccountBody, req.body ?? {}));
    res.json({ data: { account_id: req.params.id } });
  });

  r.post('/accounts/:id/credits', async (req, res) => {
    const body = validate(creditsBody, req.body ?? {});
    await addCredits(db, req.params.id, parseUsd(body.amount));
    res.json({ data: await creditsRecord(db, req.params.id) });
  });

  r.post('/accounts/:id/keys', async (req, res) => {
    const body = validate(createKeyBody, req.body ?? {});
    const created = await createKey(db, req.params.id, {
      label: body.label,
      limitNano: body.limit == null ? null : parseUsd(body.limit),
      expiresAt: body.expires_at ?? null,
    });
    res.status(201).json({ data: created });
  });

  r.delete('/keys/:keyId', async (req, res) => {
    await revokeKey(db, req.params.keyId);
    onKeyRevoked(req.params.keyId);
    res.status(204).end();
  });

  r.post('/accounts/:id/webhook-secret', async (req, res) => {
    res.json({ data: { secret: await rotateWebhookSecret(db, req.params.id) } });
  });

  return r;
}
