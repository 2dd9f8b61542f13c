import { z } from 'zod';
import {
  type Hold,
  type HoldRequest,
  type JobSettings,
  type KeyIdentity,
  MAX_RECORDED_ANSWER_BYTES,
  type RecordedAnswer,
  type ReplayClaim,
  type ReplayClaimRequest,
  type ReplayFinish,
} from './port';

/**
 * Billing's internal API, defined once for both ends: the server (services/billing internal/router.ts) parses
 * requests and encodes answers with these schemas, the fleet's client (http.ts) encodes requests and parses
 * answers with them. A field changed on one side therefore changes it on the other, and an answer that does not
 * fit is refused at the boundary (the client's 503) instead of crashing whatever reads it.
 */
export const INTERNAL_PATHS = {
  verifyKey: '/internal/keys/verify',
  holds: '/internal/holds',
  /** Several holds in one request (the client's per-turn.ts); each is answered as the single route would answer it. */
  holdsBatch: '/internal/holds/batch',
  /** Billing's own readiness for its peers (its /readyz sits on the metrics listener, which peers do not call). */
  ready: '/internal/ready',
  /** GET, with the account id as the last segment. */
  jobSettings: '/internal/accounts/:accountId/job-settings',
  /** The replay record of keyed synchronous calls (ReplayPort): claim before the hold, finish or drop after. */
  replayClaim: '/internal/replays/claim',
  replayFinish: '/internal/replays/finish',
  replayDrop: '/internal/replays/drop',
} as const;

/** JSON has no bigint: nano-USD cross the wire as a decimal string and are a bigint on both sides. */
const nanoUsd = z.codec(z.string().regex(/^\d+$/, 'nano-USD as a non-negative integer string'), z.bigint().nonnegative(), {
  decode: (s) => BigInt(s),
  encode: (n) => n.toString(),
});

export const verifyKeyRequest = z.object({ key: z.string().min(1).max(512) });

const keyIdentity = z.object({
  accountId: z.string().min(1),
  keyId: z.string().min(1),
  rateLimit: z.object({ requests: z.number().int().nonnegative(), intervalMs: z.number().int().nonnegative() }),
});
/** 200; an unknown, revoked or expired key is a 404 error envelope instead. */
export const verifyKeyAnswer = z.object({ data: keyIdentity });

/**
 * The Idempotency-Key header's one rule, on every route of both run modes (service-kit's contextOf refuses the
 * request with it, before any work) and on the hold request that carries it here. A key is stored in two unique
 * indexes (open holds, jobs); a B-tree entry over about 2.7 KB fails its insert (SQLSTATE 54000), which the
 * embedded ledger learns only after answering. 255 header characters are at most 510 bytes stored.
 */
export const idempotencyKey = z.string().min(1).max(255, 'at most 255 characters');

export const holdRequest = z.object({
  accountId: z.string(),
  keyId: z.string(),
  requestId: z.string(),
  amountNano: nanoUsd,
  model: z.string(),
  idempotencyKey: idempotencyKey.optional(),
  ttlMs: z.number().int().positive(),
});

const hold = z.object({ holdId: z.string().min(1), amountNano: nanoUsd, expiresAt: z.string() });
/** 201; a refusal (402, 409) is the error envelope instead. */
export const holdAnswer = z.object({ data: hold });

/** The most holds one batch request carries; the client splits a larger turn into several. */
export const MAX_HOLDS_PER_BATCH = 256;
/**
 * A batched hold's own W3C trace context (the request it belongs to), so billing's span for it joins that request's
 * trace rather than the batch's; absent when tracing is off. A single hold's HTTP request carries it as headers.
 */
const traceCarrier = z.object({ traceparent: z.string().max(128), tracestate: z.string().max(512).optional() });
export const batchedHoldRequest = holdRequest.extend({ trace: traceCarrier.optional() });
export const holdBatchRequest = z.object({ data: z.array(batchedHoldRequest).min(1).max(MAX_HOLDS_PER_BATCH) });
const errorBody = z.object({ code: z.string(), message: z.string(), request_id: z.string() });
/**
 * 200 for the batch as a whole, with one outcome per hold in the request's order: the status and body the single
 * route would have answered for it (201 and the hold, or a refusal's status and envelope).
 */
export const holdBatchAnswer = z.object({
  data: z.array(
    z.union([z.object({ status: z.literal(201), data: hold }), z.object({ status: z.number().int().min(400).max(599), error: errorBody })]),
  ),
});

const jobSettings = z.object({ jobConcurrency: z.number().int().positive().nullable(), webhookSecret: z.string().min(1) });
/** 200; an unknown account is a 404 error envelope instead. */
export const jobSettingsAnswer = z.object({ data: jobSettings });

export const replayClaimRequest = z.object({
  accountId: z.string().min(1),
  idempotencyKey,
  fingerprint: z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 in hex'),
  requestId: z.string().min(1),
  leaseMs: z.number().int().positive(),
});
const recordedAnswer = z.object({
  status: z.number().int().min(200).max(299),
  headers: z.record(z.string(), z.string()),
  body: z.string().max(MAX_RECORDED_ANSWER_BYTES),
});
const replayClaim = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('run') }),
  z.object({ kind: z.literal('replay'), requestId: z.string().min(1), answer: recordedAnswer }),
  z.object({ kind: z.literal('finished'), requestId: z.string().min(1), streamed: z.boolean() }),
]);
/** 200; a key used with another request is the 409 duplicate_request envelope instead. */
export const replayClaimAnswer = z.object({ data: replayClaim });
export const replayFinish = z.object({
  accountId: z.string().min(1),
  idempotencyKey,
  requestId: z.string().min(1),
  streamed: z.boolean(),
  answer: recordedAnswer.optional(),
});
export const replayDrop = replayFinish.pick({ accountId: true, idempotencyKey: true, requestId: true });
/** Room for the largest answer kept, JSON-escaped, and the rest of the request. */
export const REPLAY_FINISH_BODY_LIMIT = `${2 * MAX_RECORDED_ANSWER_BYTES + 64 * 1024}b`;

// The port's types and the wire's must stay the same shape: a field added to one and not the other fails to
// compile here, rather than being silently dropped when the object crosses the wire.
type Same<A, B> = [A] extends [B]
  ? [B] extends [A]
    ? [keyof A] extends [keyof B]
      ? [keyof B] extends [keyof A]
        ? true
        : false
      : false
    : false
  : false;
const portMatchesWire: [
  Same<z.output<typeof keyIdentity>, KeyIdentity>,
  Same<z.output<typeof holdRequest>, HoldRequest>,
  Same<z.output<typeof hold>, Hold>,
  Same<z.output<typeof jobSettings>, JobSettings>,
  Same<z.output<typeof replayClaimRequest>, ReplayClaimRequest>,
  Same<z.output<typeof recordedAnswer>, RecordedAnswer>,
  Same<z.output<typeof replayClaim>, ReplayClaim>,
  Same<z.output<typeof replayFinish>, ReplayFinish>,
] = [true, true, true, true, true, true, true, true];
void portMatchesWire;
