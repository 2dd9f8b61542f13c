import { type GatewayConfig, parseDuration } from '@gateway/config';

/**
 * What one account may make this endpoint hold. The batch bounds are the protocol's, not the operator's: 100
 * messages is the official SDK's own server cap (MAX_BATCH_SIZE), and answers are capped so a batch of cheap calls
 * cannot make a response of many megabytes.
 */
export interface McpLimits {
  /** Messages in one POST; a longer batch is refused before any of it runs. */
  maxBatch: number;
  /** Bytes of one batch's answers; an answer past it is replaced by an error asking for that call alone. */
  maxBatchAnswerBytes: number;
  /** Calls of one batch run at once, so a batch cannot take the event loop for itself. */
  batchConcurrency: number;
  /** A session unused this long ends (no call and no open stream). */
  sessionIdleTtlMs: number;
  /** Live sessions per account (all replicas: counted in the database). */
  sessionsPerAccount: number;
  /** Open GET streams per account on one process. */
  streamsPerAccount: number;
}

export const BATCH_LIMITS = { maxBatch: 100, maxBatchAnswerBytes: 4 * 1024 * 1024, batchConcurrency: 8 } as const;

export function mcpLimitsOf(config: Pick<GatewayConfig, 'mcp'>): McpLimits {
  return {
    ...BATCH_LIMITS,
    sessionIdleTtlMs: parseDuration(config.mcp.session_idle_ttl),
    sessionsPerAccount: config.mcp.sessions_per_account,
    streamsPerAccount: config.mcp.streams_per_account,
  };
}
