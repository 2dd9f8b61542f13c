import type { EventBus, Subscription } from '@gateway/bus';
import { EVENT_TYPES, TOPICS, jobStateSchema } from '@gateway/events';
import type { Logger } from '@gateway/service-kit';
import type { SessionStore } from '../sessions';
import type { Notifier } from './notifier';

const ENDED = new Set(['succeeded', 'failed', 'canceled']);

/**
 * Job state changes from the jobs service's outbox. One consumer group for every replica: the message is written
 * to the session's table, which every replica's stream reads, so it does not matter which replica consumed it.
 * Idempotent: a redelivered event finds its message queued already.
 */
export function consumeJobEvents(bus: EventBus, sessions: SessionStore, notifier: Notifier, logger: Logger): Promise<Subscription> {
  return bus.subscribe('mcp', [TOPICS.jobs], async (event) => {
    if (event.type !== EVENT_TYPES.jobState) return;
    const parsed = jobStateSchema.safeParse(event.data);
    if (!parsed.success) {
      logger.warn({ eventId: event.id, issues: parsed.error.issues }, 'malformed job.state.v1 event skipped');
      return;
    }
    const s = parsed.data;
    if (!ENDED.has(s.status)) return;
    const sessionId = await sessions.sessionOfJob(s.job_id, s.account_id);
    if (!sessionId) return;
    await notifier.jobEnded(sessionId, {
      job_id: s.job_id,
      model: s.model,
      outcome: s.status,
      error_code: s.error_code,
      gateway_request_id: s.gateway_request_id,
    });
  });
}
