import type { Logger } from '@gateway/service-kit';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  fields: Record<string, unknown>;
  msg: string;
}

/** Test suites only: a Logger that keeps what was logged, so a test can prove a failure was visible. */
export function recordingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: LogLine['level']) => (fields: Record<string, unknown>, msg: string) => void lines.push({ level, fields, msg });
  // Only the calls billing makes; a call to anything else fails the test loudly.
  const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
  return { logger, lines };
}
