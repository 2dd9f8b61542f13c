import type { EventBus, Subscription } from '@gateway/bus';
import {
  accountOpenedSchema,
  CONSUMER_GROUPS,
  EVENT_TYPES,
  endpointHealthSchema,
  type EndpointHealth,
  UNHURRIED_GATHER_MS,
  usageRecordedSchema,
} from '@gateway/events';
import type { Logger } from '@gateway/service-kit';
import type { StatsStore } from './store';
import { statsTokens } from './stats-tokens';
import type { UsageTally } from './usage-tally';

export interface CatalogueEventSinks {
  store: StatsStore;
  tally: UsageTally;
  /** The spending processes' endpoint health reports, for the status monitor; absent, they are read and dropped. */
  saveReport?(report: EndpointHealth): Promise<void>;
}

/**
 * Everything group `catalogue` reads, in one subscription: billing's `account.opened.v1` and `usage.recorded.v1` into
 * the stats tables, the spending services' `endpoint.health.v1` into the status store. One subscription because Kafka
 * assigns a group's partitions over the union of its members' topics: two subscriptions of one group on different
 * topics would each be handed partitions of the other's topics, which kafkajs skips, and those events would never
 * be read. Stats apply once per event id; a handler that throws (the database is down) gets its event again. A new
 * group reads from the oldest retained event: billing announces every account at its start, which may be before this
 * group first exists (the health reports replayed then are older than the monitor looks back, so they change nothing).
 */
export function consumeCatalogueEvents(sinks: CatalogueEventSinks, bus: EventBus, logger: Logger): Promise<Subscription> {
  return bus.subscribe(
    'catalogue',
    [...CONSUMER_GROUPS.catalogue],
    async (event) => {
      if (event.type === EVENT_TYPES.accountOpened) {
        const parsed = accountOpenedSchema.safeParse(event.data);
        if (!parsed.success) return void logger.error({ eventId: event.id, issues: parsed.error.issues }, 'dropping malformed account event');
        await sinks.store.accountOpened(parsed.data.account_id, parsed.data.opened_at);
      } else if (event.type === EVENT_TYPES.usageRecorded) {
        const parsed = usageRecordedSchema.safeParse(event.data);
        if (!parsed.success) return void logger.error({ eventId: event.id, issues: parsed.error.issues }, 'dropping malformed usage event');
        const u = parsed.data;
        const finished = new Date(u.finished_at);
        // The contract's `tokens` leaves out cached input and reasoning, both parts of the prompt and completion counts.
        sinks.tally.add(event.id, Number.isNaN(finished.getTime()) ? new Date() : finished, statsTokens(u));
      } else if (event.type === EVENT_TYPES.endpointHealth) {
        const parsed = endpointHealthSchema.safeParse(event.data);
        if (!parsed.success) return void logger.error({ eventId: event.id, issues: parsed.error.issues }, 'dropping malformed health report');
        await sinks.saveReport?.(parsed.data);
      }
    },
    { fromBeginning: true, gatherMs: UNHURRIED_GATHER_MS },
  );
}
