/**
 * The per-account request meter: a fixed window of `limit` requests per `windowMs`, shared by every key
 * of the account. Every request is counted, refused ones too (the spec's rule 2 of Errors).
 */
export interface MeterResult {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the window refills. */
  resetAt: number;
  /** Seconds until the window refills (for Retry-After), at least 1. */
  retryAfter: number;
}

export interface RateMeter {
  hit(accountId: string, limit: number, windowMs: number): Promise<MeterResult>;
  close(): Promise<void>;
}
