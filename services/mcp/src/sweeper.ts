import type { Logger } from '@gateway/service-kit';
import type { SessionStore } from './sessions';

/**
 * Deletes ended and idle sessions (with their queued messages and job links) now and every `everyMs`. Every replica
 * runs one: the delete is idempotent, and a session is idle only when no replica has touched it for the whole TTL.
 */
export function startSweeper(sessions: SessionStore, everyMs: number, logger: Logger): { stop(): void } {
  const sweep = () =>
    sessions.sweep().then(
      (n) => n > 0 && logger.info({ sessions: n }, 'mcp sessions expired'),
      (err) => logger.warn({ err }, 'mcp session sweep failed; the next one tries again'),
    );
  void sweep();
  const timer = setInterval(sweep, everyMs).unref();
  return { stop: () => clearInterval(timer) };
}
