import type { EventBus, Subscription } from '@gateway/bus';
import { accountOpenedSchema, EVENT_TYPES, TOPICS, usageRecordedSchema } from '@gateway/events';
import type { Logger } from '@gateway/service-kit';
import type { StatsStore } from './store';
import type { UsageTally } from './usage-tally';

/**
 * Billing's `account.opened.v1` and `usage.recorded.v1`, into the stats tables (group `catalogue`). Both apply once
 * per event id; a handler that throws (the database is down) gets its event again. A new group reads from the
 * oldest retained event: billing announces every account at its start, which may be before this group first exists.
 */
export function consumeStatsEvents(store: StatsStore, tally: UsageTally, bus: EventBus, logger: Logger): Promise<Subscription> {
  return bus.subscribe(
    'catalogue',
    [TOPICS.accounts, TOPICS.usage],
    async (event) => {
      if (event.type === EVENT_TYPES.accountOpened) {
        const parsed = accountOpenedSchema.safeParse(event.data);
        if (!parsed.success) return void logger.error({ eventId: event.id, issues: parsed.error.issues }, 'dropping malformed account event');
        await store.accountOpened(parsed.data.account_id, parsed.data.opened_at);
      } else if (event.type === EVENT_TYPES.usageRecorded) {
        const parsed = usageRecordedSchema.safeParse(event.data);
        if (!parsed.success) return void logger.error({ eventId: event.id, issues: parsed.error.issues }, 'dropping malformed usage event');
        const u = parsed.data;
        const finished = new Date(u.finished_at);
        // Only prompt and completion are recorded, so cached-input and reasoning tokens are never in this sum.
        tally.add(event.id, Number.isNaN(finished.getTime()) ? new Date() : finished, u.tokens_prompt + u.tokens_completion);
      }
    },
    { fromBeginning: true },
  );
}
