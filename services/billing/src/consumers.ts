import type { EventBus, Subscription } from '@gateway/bus';
import { EVENT_TYPES, TOPICS, holdCloseSchema } from '@gateway/events';
import type { Logger } from '@gateway/service-kit';
import type { Ledger } from './ledger/holds';

/** Settles and releases holds from the bus. Redelivery is harmless: close_hold is a no-op on a closed hold. */
export function consumeHoldCloses(ledger: Ledger, bus: EventBus, logger: Logger): Promise<Subscription> {
  return bus.subscribe('billing', [TOPICS.holds], async (event) => {
    if (event.type !== EVENT_TYPES.holdClose) return;
    const parsed = holdCloseSchema.safeParse(event.data);
    if (!parsed.success) {
      // A malformed event can never apply; retrying it forever would block its account's queue.
      logger.error({ eventId: event.id, issues: parsed.error.issues }, 'dropping malformed hold event');
      return;
    }
    const ev = parsed.data;
    const { result, charged } = await ledger.closeHold(ev);
    if (result === 'late_charged' || result === 'late_dropped' || result === 'unknown') {
      logger.warn({ holdId: ev.hold_id, requestId: ev.request_id, result, charged: charged.toString() }, 'hold closed after expiry');
    }
    if (ev.record.capped_from_nano) {
      logger.warn({ holdId: ev.hold_id, requestId: ev.request_id, reported: ev.record.capped_from_nano, charged: charged.toString() }, 'upstream reported more than the hold; charge capped');
    }
  });
}
