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
