import { Router } from 'express';
import { internalApi, type BillingPort, type JobSettingsPort, type ReplayPort } from '@gateway/billing-client';
import { GatewayError, errorEnvelope, toGatewayError } from '@gateway/errors';
import { jsonBody, requireInternalToken, sendJson, validate } from '@gateway/service-kit';
import { inTraceOf } from './hold-trace';

/**
 * Billing's internal API for the fleet: the HTTP face of the same BillingPort the embedded gateway calls directly.
 * Requests and answers are the shared contract's (@gateway/billing-client contract.ts), which the client reads back.
 */
export function internalRouter(
  port: BillingPort & JobSettingsPort & ReplayPort,
  internalToken: string | undefined,
  acceptedInternalToken: string | undefined,
  /** Told of a batched hold that failed with anything but a refusal (a single one reaches the app's error handler). */
  onUnexpected: (err: unknown) => void = () => {},
): Router {
  const r = Router();
  r.use(requireInternalToken(internalToken, acceptedInternalToken));
  // Room for MAX_HOLDS_PER_BATCH holds of the single route's 16 KB each (real ones are about 300 bytes): holds that
  // would each be taken alone are never refused for having travelled together.
  r.post(internalApi.INTERNAL_PATHS.holdsBatch, jsonBody('5mb'), async (req, res) => {
    const { data } = validate(internalApi.holdBatchRequest, req.body);
    // Together into the port, so its per-account group commit takes them in one statement.
    const outcomes = await Promise.allSettled(data.map(({ trace, ...hold }) => inTraceOf(trace, () => port.placeHold(hold))));
    const answer = internalApi.holdBatchAnswer.encode({
      data: outcomes.map((o) => {
        if (o.status === 'fulfilled') return { status: 201 as const, data: o.value };
        if (!(o.reason instanceof GatewayError)) onUnexpected(o.reason);
        const err = toGatewayError(o.reason);
        return { status: err.status, ...errorEnvelope(err, '') };
      }),
    });
    sendJson(res, answer);
  });
  // The answer a retry will get, whole: as large as the largest answer kept.
  r.post(internalApi.INTERNAL_PATHS.replayFinish, jsonBody(internalApi.REPLAY_FINISH_BODY_LIMIT), async (req, res) => {
    await port.finishReplay(validate(internalApi.replayFinish, req.body));
    res.status(204).end();
  });
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
  r.post(internalApi.INTERNAL_PATHS.replayClaim, async (req, res) => {
    sendJson(res, internalApi.replayClaimAnswer.encode({ data: await port.claimReplay(validate(internalApi.replayClaimRequest, req.body)) }));
  });
  r.post(internalApi.INTERNAL_PATHS.replayDrop, async (req, res) => {
    await port.dropReplay(validate(internalApi.replayDrop, req.body));
    res.status(204).end();
  });
  r.post(internalApi.INTERNAL_PATHS.holds, async (req, res) => {
    const hold = await port.placeHold(validate(internalApi.holdRequest, req.body));
    sendJson(res, internalApi.holdAnswer.encode({ data: hold }), 201);
  });
  return r;
}
