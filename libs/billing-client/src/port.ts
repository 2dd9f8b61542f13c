/**
 * What other services ask of billing synchronously: who a key is, and a hold placed before anything is routed.
 * Settling and releasing travel over the event bus (see @gateway/events). In the embedded gateway this port
 * is billing's own object; in the fleet it is an HTTP client to billing's internal API.
 */
export interface KeyIdentity {
  accountId: string;
  keyId: string;
  /** The account's request meter: requests per interval. */
  rateLimit: { requests: number; intervalMs: number };
}

export interface HoldRequest {
  accountId: string;
  keyId: string;
  requestId: string;
  amountNano: bigint;
  model: string;
  idempotencyKey?: string;
  /** How long the hold may stay open before the sweeper releases it. */
  ttlMs: number;
}

export interface Hold {
  holdId: string;
  amountNano: bigint;
  expiresAt: string;
}

export interface BillingPort {
  /** Resolves a raw API key, or undefined when it is unknown, revoked or expired. Throws when billing is unreachable. */
  verifyKey(rawKey: string): Promise<KeyIdentity | undefined>;
  /** Places a hold or throws GatewayError (402 insufficient_credits, 409 duplicate_request). */
  placeHold(req: HoldRequest): Promise<Hold>;
  ping(): Promise<void>;
}

/** What the jobs service needs of an account: its own concurrency ceiling, and the secret its webhooks are signed with. */
export interface JobSettings {
  /** The account's own ceiling of jobs in flight; null means the config's `limits.job_concurrency`. */
  jobConcurrency: number | null;
  /** Created on first need when the account has none yet; the admin API's rotate route replaces it and shows it. */
  webhookSecret: string;
}

/** Read at every submit (the ceiling) and every delivery (the secret), so a change applies at once. */
export interface JobSettingsPort {
  /** Throws GatewayError model_unavailable (404) for an unknown account. */
  jobSettings(accountId: string): Promise<JobSettings>;
}

/** A finished non-streamed answer as the client received it, kept for a retry with the same Idempotency-Key. */
export interface RecordedAnswer {
  status: number;
  /** The headers a replay repeats (content type, cost); the request id travels as the claim's `requestId`. */
  headers: Record<string, string>;
  body: string;
}

export interface ReplayClaimRequest {
  accountId: string;
  idempotencyKey: string;
  /** requestFingerprint of the route and body: the same key with another request is refused. */
  fingerprint: string;
  requestId: string;
  /** How long a running call keeps the key (the hold's TTL): past that, it died unanswered and a retry takes over. */
  leaseMs: number;
}

/**
 * What a keyed request does. `run`: nothing finished under this key (the first call, or a retry of one that failed
 * or died): it runs, and its answer is kept. `replay`: a finished non-streamed call; its answer is sent again,
 * nothing is held. `finished`: a finished call whose answer was not kept (a stream, an oversized body): 409.
 */
export type ReplayClaim =
  | { kind: 'run' }
  | { kind: 'replay'; requestId: string; answer: RecordedAnswer }
  | { kind: 'finished'; requestId: string; streamed: boolean };

export interface ReplayFinish {
  accountId: string;
  idempotencyKey: string;
  requestId: string;
  streamed: boolean;
  /** Absent for a stream, or an answer too large to keep: a retry is then refused instead of replayed. */
  answer?: RecordedAnswer;
}

/**
 * Billing's record of keyed synchronous calls (a table beside the ledger), so a retry of a finished call never
 * runs, and never pays, twice. Records expire after REPLAY_WINDOW_MS.
 */
export interface ReplayPort {
  /** Throws 409 duplicate_request when the key was used with another request (route or body), or one is still running. */
  claimReplay(req: ReplayClaimRequest): Promise<ReplayClaim>;
  /** The call answered 2xx: a retry replays its answer (or is refused, for a stream) from now on. */
  finishReplay(req: ReplayFinish): Promise<void>;
  /** The call failed (nothing charged): its claim goes, so a retry runs again. Only the claimer's own is dropped. */
  dropReplay(req: Pick<ReplayFinish, 'accountId' | 'idempotencyKey' | 'requestId'>): Promise<void>;
}

/** How long a finished keyed call is replayed (then swept): 24 hours, as Stripe keeps its keys. */
export const REPLAY_WINDOW_MS = 24 * 60 * 60_000;
/** Answers larger than this are not kept: a retry gets 409 naming the generation, as a stream does. */
export const MAX_RECORDED_ANSWER_BYTES = 4 * 1024 * 1024;
