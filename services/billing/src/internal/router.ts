import express, { Router } from 'express';
import { z } from 'zod';
import type { BillingPort } from '@gateway/billing-client';
import { requireInternalToken, validate } from '@gateway/service-kit';

const verifyBody = z.object({ key: z.string().min(1).max(512) });
const holdBody = z.object({
  accountId: z.string(),
  keyId: z.string(),
  requestId: z.string(),
  amountNano: z.string().regex(/^\d+$/),
  model: z.string(),
  idempotencyKey: z.string().max(255).optional(),
  ttlMs: z.number().int().positive(),
});

/** Billing's internal API for the fleet: the HTTP face of the same BillingPort the embedded gateway calls directly. */
export function internalRouter(port: BillingPort, internalToken: string | undefined): Router {
  const r = Router();
  r.use(requireInternalToken(internalToken));
  r.use(express.json({ limit: '16kb' }));
  r.get('/internal/ready', async (_req, res) => {
    await port.ping();
    res.json({ data: { ready: true } });
  });
  r.post('/internal/keys/verify', async (req, res) => {
    const identity = await port.verifyKey(validate(verifyBody, req.body).key);
    if (!identity) return void res.status(404).json({ error: { code: 'invalid_api_key', message: 'unknown key', request_id: '' } });
    res.json({ data: identity });
  });
  r.post('/internal/holds', async (req, res) => {
    const body = validate(holdBody, req.body);
    const hold = await port.placeHold({ ...body, amountNano: BigInt(body.amountNano) });
    res.status(201).json({ data: { ...hold, amountNano: hold.amountNano.toString() } });
  });
  return r;
}
