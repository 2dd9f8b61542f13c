import type { UsageRecorded } from '@gateway/events';

/**
 * The tokens one call adds to /v1/stats `tokens`: input plus output, without the input the upstream read from its
 * prompt cache and without the reasoning (the contract's definition). Cache writes are input the model read afresh,
 * so they count. Events from before the figures existed carry none.
 */
export function statsTokens(u: Pick<UsageRecorded, 'tokens_prompt' | 'tokens_completion' | 'tokens_cached' | 'tokens_reasoning'>): number {
  const input = u.tokens_prompt - Math.min(u.tokens_cached ?? 0, u.tokens_prompt);
  const output = u.tokens_completion - Math.min(u.tokens_reasoning ?? 0, u.tokens_completion);
  return input + output;
}
