import { type LoggingLevel, LoggingLevelSchema } from '@modelcontextprotocol/sdk/types.js';

/** MCP's log levels (RFC 5424's), least severe first: a level's rank is its index. */
export const LOG_LEVELS = LoggingLevelSchema.options;

export function logRank(level: LoggingLevel): number {
  return LOG_LEVELS.indexOf(level);
}
