import type { EventBus, Subscription } from '@gateway/bus';
import { EVENT_TYPES, TOPICS, holdCheckpointSchema, holdCloseSchema } from '@gateway/events';
import { publishUsage } from './publish';
import type { Logger } from '@gateway/service-kit';
import type { Ledger } from './ledger/holds';

/**
 * Settles and releases holds from the bus (`hold.close.v1`, keyed by hold), and keeps streams' checkpoints
 * (`hold.checkpoint.v1`, applied if their hold expires unclosed). Delivery is at least once, and
 * redelivery is harmless: close_hold is a no-op on a closed hold. A handler that throws (the database is down)
 * gets the event again, so nothing is acknowledged before it is applied. Each applied close is then announced as
 * `usage.recorded.v1`.
 */
export function consumeHoldCloses(ledger: Ledger, bus: EventBus, logger: Logger): Promise<Subscription> {
  return bus.subscribe('billing', [TOPICS.holds], async (event) => {
    if (event.type === EVENT_TYPES.holdCheckpoint) {
      const parsed = holdCheckpointSchema.safeParse(event.data);
      if (!parsed.success) return void logger.error({ eventId: event.id, issues: parsed.error.issues }, 'dropping malformed hold checkpoint');
      await ledger.checkpointHold(parsed.data);
      return;
    }
    if (event.type !== EVENT_TYPES.holdClose) return;
    const parsed = holdCloseSchema.safeParse(event.data);
    if (!parsed.success) {
      // A malformed event can never apply; retrying it would only hold up the events queued behind it on its key.
      logger.error({ eventId: event.id, issues: parsed.error.issues }, 'dropping malformed hold event');
      return;
    }
    const ev = parsed.data;
    const { result, charged } = await ledger.closeHold(ev);
    const about = { holdId: ev.hold_id, requestId: ev.request_id, result, charged: charged.toString() };
    // What it meant to charge: the one trace of a settle whose hold was dead-lettered (docs/operations.md).
    if (result === 'unknown') logger.warn({ ...about, chargeNano: ev.charge_nano }, 'hold event for an unknown hold; nothing applied');
    // After the commit, and again on a redelivery (same event id): a publish lost to a crash here is sent next time.
    else await publishUsage(bus, ev, result, charged);
    if (result === 'late_charged' || result === 'late_dropped') logger.warn(about, 'hold closed after expiry');
    // Logged on every delivery, a redelivery included: an answer lost after the commit must not lose the warning.
    if (ev.record.capped_from_nano) {
      logger.warn({ ...about, reported: ev.record.capped_from_nano }, 'upstream reported more than the hold; charge capped');
    }
  });
}
