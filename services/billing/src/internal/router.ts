import { Router } from 'express';
import { internalApi, type BillingPort, type JobSettingsPort } from '@gateway/billing-client';
import { jsonBody, requireInternalToken, sendJson, validate } from '@gateway/service-kit';

/**
 * Billing's internal API for the fleet: the HTTP face of the same BillingPort the embedded gateway calls directly.
 * Requests and answers are the shared contract's (@gateway/billing-client contract.ts), which the client reads back.
 */
export function internalRouter(port: BillingPort & JobSettingsPort, internalToken: string | undefined): Router {
  const r = Router();
  r.use(requireInternalToken(internalToken));
  r.use(jsonBody('16kb'));
  r.get(internalApi.INTERNAL_PATHS.ready, async (_req, res) => {
    await port.ping();
    res.json({ data: { ready: true } });
  });
  r.post(internalApi.INTERNAL_PATHS.verifyKey, async (req, res) => {
    const identity = await port.verifyKey(validate(internalApi.verifyKeyRequest, req.body).key);
    if (!identity) return void res.status(404).json({ error: { code: 'invalid_api_key', message: 'unknown key', request_id: '' } });
    res.json(internalApi.verifyKeyAnswer.encode({ data: identity }));
  });
  r.get(internalApi.INTERNAL_PATHS.jobSettings, async (req, res) => {
    res.json(internalApi.jobSettingsAnswer.encode({ data: await port.jobSettings(String(req.params.accountId)) }));
  });
  r.post(internalApi.INTERNAL_PATHS.holds, async (req, res) => {
    const hold = await port.placeHold(validate(internalApi.holdRequest, req.body));
    sendJson(res, internalApi.holdAnswer.encode({ data: hold }), 201);
  });
  return r;
}
