import type { LoggingLevel } from '@modelcontextprotocol/sdk/types.js';

/**
 * MCP's log levels (RFC 5424's), least severe first: a level's rank is its index. Written out rather than read from
 * the SDK's LoggingLevelSchema, so that the session streams, which rank levels, do not load the SDK at start
 * (mcp-sdk.ts); log-level.test.ts holds the two equal.
 */
export const LOG_LEVELS = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
] as const satisfies readonly LoggingLevel[];

export function logRank(level: LoggingLevel): number {
  return LOG_LEVELS.indexOf(level);
}
