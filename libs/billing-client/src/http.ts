import { context, propagation } from '@opentelemetry/api';
import { Pool } from 'undici';
import type { z } from 'zod';
import { GatewayError } from '@gateway/errors';
import { CONNECT_TIMEOUT_MS, POOLED_IDLE, ReplicaSet, addressList } from '@gateway/topology';
import {
  INTERNAL_PATHS,
  MAX_HOLDS_PER_BATCH,
  type batchedHoldRequest,
  holdAnswer,
  holdBatchAnswer,
  holdRequest,
  jobSettingsAnswer,
  replayClaimAnswer,
  replayClaimRequest,
  replayDrop,
  replayFinish,
  verifyKeyAnswer,
  verifyKeyRequest,
} from './contract';
import { perTurn } from './per-turn';
import type { BillingPort, Hold, HoldRequest, JobSettings, JobSettingsPort, KeyIdentity, ReplayClaim, ReplayPort } from './port';

const unreachable = () => new GatewayError('upstream_unavailable', 'The key and billing service is unreachable; try again shortly');
/** An answer outside the contract (a half-deployed fleet, a proxy's error page): billing is not usable right now. */
const unreadable = () =>
  new GatewayError('upstream_unavailable', 'The key and billing service gave an answer the gateway cannot read; try again shortly');
/** A billing from before the batch route (a rolling deploy) is asked one hold at a time for this long, then again. */
const BATCH_RETRY_AFTER_MS = 60_000;

/**
 * Billing's internal API over HTTP with a keep-alive pool, both ends of the wire checked against contract.ts.
 * Any transport failure or unreadable answer is a 503, never a 401 or a crash. Holds asked for in one turn of the
 * event loop share one request (per-turn.ts): under load that is most of the HTTP work of a hold, on both sides.
 * `baseUrl` may list several replicas, comma-separated: one keep-alive pool each, taken round-robin, and a replica
 * that refuses the connection is skipped (libs/topology/src/replicas.ts); a request it took is never resent.
 */
export function createBillingHttpClient(
  baseUrl: string,
  internalToken?: string,
): BillingPort & JobSettingsPort & ReplayPort & { close(): Promise<void> } {
  const pools = new Map(
    addressList(baseUrl).map((url) => [
      url,
      new Pool(url, { connections: 64, pipelining: 1, ...POOLED_IDLE, connect: { timeout: CONNECT_TIMEOUT_MS } }),
    ]),
  );
  const replicas = new ReplicaSet([...pools.keys()]);
  const request = (options: Parameters<Pool['request']>[0]) => replicas.call((url) => (pools.get(url) as Pool).request(options));
  const headers = { 'content-type': 'application/json', ...(internalToken ? { 'x-gateway-internal-token': internalToken } : {}) };

  async function post(path: string, body: unknown): Promise<{ status: number; json: unknown }> {
    return send('POST', path, JSON.stringify(body));
  }

  async function send(method: 'GET' | 'POST', path: string, body?: string): Promise<{ status: number; json: unknown }> {
    let status: number;
    let text: string;
    try {
      const res = await request({ path, method, headers, body });
      status = res.statusCode;
      text = await res.body.text();
    } catch {
      throw unreachable();
    }
    try {
      return { status, json: text ? JSON.parse(text) : undefined };
    } catch {
      throw unreadable();
    }
  }

  type WireHold = z.input<typeof batchedHoldRequest>;
  let batchRefusedAt = Number.NEGATIVE_INFINITY;

  // Sent from the turn's flush, which runs in the context of the turn's first call: for a lone hold, its own.
  async function placeOne({ trace: _inHeaders, ...hold }: WireHold): Promise<Hold> {
    const r = await post(INTERNAL_PATHS.holds, hold);
    if (r.status === 201) return answer(holdAnswer, r.json).data;
    throw GatewayError.fromEnvelope(r.status, r.json) ?? new GatewayError('upstream_unavailable', 'The billing service failed to place the hold');
  }

  async function placeMany(holds: WireHold[]): Promise<(Hold | Error)[]> {
    if (Date.now() - batchRefusedAt < BATCH_RETRY_AFTER_MS) return Promise.all(holds.map((h) => placeOne(h).catch((e: Error) => e)));
    const r = await post(INTERNAL_PATHS.holdsBatch, { data: holds });
    if (r.status === 404) {
      batchRefusedAt = Date.now();
      return placeMany(holds);
    }
    if (r.status !== 200)
      throw GatewayError.fromEnvelope(r.status, r.json) ?? new GatewayError('upstream_unavailable', 'The billing service failed to place the holds');
    const outcomes = answer(holdBatchAnswer, r.json).data;
    if (outcomes.length !== holds.length) throw unreadable();
    return outcomes.map((o) =>
      'data' in o
        ? o.data
        : (GatewayError.fromEnvelope(o.status, o) ?? new GatewayError('upstream_unavailable', 'The billing service failed to place the hold')),
    );
  }

  const placeHold = perTurn(placeOne, placeMany, MAX_HOLDS_PER_BATCH);

  function answer<S extends z.ZodType>(schema: S, json: unknown): z.output<S> {
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw unreadable();
    return parsed.data;
  }

  return {
    async verifyKey(rawKey): Promise<KeyIdentity | undefined> {
      // A key that does not fit the contract cannot be a key billing issued: unknown, as the embedded port says.
      const body = verifyKeyRequest.safeEncode({ key: rawKey });
      if (!body.success) return undefined;
      const r = await post(INTERNAL_PATHS.verifyKey, body.data);
      if (r.status === 200) return answer(verifyKeyAnswer, r.json).data;
      // Only billing's own "unknown key" is a 401; any other 404 (a misrouted request) says nothing about the key.
      if (r.status === 404 && GatewayError.fromEnvelope(r.status, r.json)?.code === 'invalid_api_key') return undefined;
      throw new GatewayError('upstream_unavailable', 'The key service failed; try again shortly');
    },
    placeHold: (req: HoldRequest): Promise<Hold> => {
      const body = holdRequest.safeEncode(req);
      if (!body.success) {
        const issue = body.error.issues[0];
        return Promise.reject(new GatewayError('invalid_request', `Invalid request: ${issue.path.join('.') || 'body'}: ${issue.message}`));
      }
      const trace: { traceparent?: string; tracestate?: string } = {};
      propagation.inject(context.active(), trace);
      return placeHold(trace.traceparent ? { ...body.data, trace: { traceparent: trace.traceparent, tracestate: trace.tracestate } } : body.data);
    },
    async jobSettings(accountId): Promise<JobSettings> {
      const r = await send('GET', INTERNAL_PATHS.jobSettings.replace(':accountId', encodeURIComponent(accountId)));
      if (r.status === 200) return answer(jobSettingsAnswer, r.json).data;
      throw GatewayError.fromEnvelope(r.status, r.json) ?? new GatewayError('upstream_unavailable', 'The billing service failed to read the account');
    },
    async claimReplay(req): Promise<ReplayClaim> {
      const r = await post(INTERNAL_PATHS.replayClaim, replayClaimRequest.encode(req));
      if (r.status === 200) return answer(replayClaimAnswer, r.json).data;
      throw (
        GatewayError.fromEnvelope(r.status, r.json) ??
        new GatewayError('upstream_unavailable', 'The billing service failed to read the Idempotency-Key')
      );
    },
    async finishReplay(req) {
      const r = await post(INTERNAL_PATHS.replayFinish, replayFinish.encode(req));
      if (r.status !== 204) throw new GatewayError('upstream_unavailable', 'The billing service failed to keep the answer for a retry');
    },
    async dropReplay(req) {
      const r = await post(INTERNAL_PATHS.replayDrop, replayDrop.encode(req));
      if (r.status !== 204) throw new GatewayError('upstream_unavailable', 'The billing service failed to free the Idempotency-Key');
    },
    async ping() {
      const res = await request({ path: INTERNAL_PATHS.ready, method: 'GET', headers }).catch(() => undefined);
      await res?.body.dump();
      if (res?.statusCode !== 200) throw new Error('billing not ready');
    },
    close: () => Promise.all([...pools.values()].map((p) => p.close())).then(() => undefined),
  };
}
