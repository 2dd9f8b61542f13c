import { logRank } from '../log-level';
import type { SessionStore } from '../sessions';
import type { StreamHub } from './hub';
import { type JobEnd, jobEndMessage } from './job-notification';

/**
 * Queues server-initiated messages in the session's table and wakes this process's open streams of that session at
 * once; a stream on another replica finds the message at its process's next poll (hub.ts). A message below the
 * level the session set (logging/setLevel) is not queued at all.
 */
export class Notifier {
  constructor(
    private readonly sessions: SessionStore,
    private readonly hub: StreamHub,
  ) {}

  async jobEnded(sessionId: string, end: JobEnd): Promise<void> {
    const { dedupeKey, message, level } = jobEndMessage(end);
    if (await this.sessions.enqueue(sessionId, dedupeKey, message, logRank(level))) this.hub.wake(sessionId);
  }
}
