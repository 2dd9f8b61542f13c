import { EventEmitter } from 'node:events';
import type { SessionStore } from '../sessions';
import { type JobEnd, jobEndMessage } from './job-notification';

/**
 * Queues server-initiated messages in the session's table and wakes this process's open stream of that session at
 * once; a stream on another replica finds the message at its next poll.
 */
export class Notifier {
  private readonly local = new EventEmitter().setMaxListeners(0);

  constructor(private readonly sessions: SessionStore) {}

  async jobEnded(sessionId: string, end: JobEnd): Promise<void> {
    const { dedupeKey, message } = jobEndMessage(end);
    if (await this.sessions.enqueue(sessionId, dedupeKey, message)) this.wake(sessionId);
  }

  /** A stream of this process waits here between polls. */
  onWake(sessionId: string, fn: () => void): () => void {
    this.local.on(sessionId, fn);
    return () => this.local.off(sessionId, fn);
  }

  /** The session ended here: its stream on this process closes now, not at its next poll. */
  wake(sessionId: string): void {
    this.local.emit(sessionId);
  }
}
