import type { EventBus, Subscription } from '@gateway/bus';
import type { ModelRegistry } from '@gateway/config';
import type { Db } from '@gateway/db';
import { EVENT_TYPES, TOPICS, UNHURRIED_GATHER_MS, usageRecordedSchema } from '@gateway/events';
import type { Logger } from '@gateway/service-kit';

/**
 * A job's `cost` in the list is billing's figure, once billing has applied the close: the usage event it publishes
 * after the ledger commit. Idempotent (it sets the same value again on redelivery); an event for a request that is
 * no job (a synchronous call) matches no row.
 */
export function followSettlements(db: Db, registry: ModelRegistry, bus: EventBus, logger: Logger): Promise<Subscription> {
  return bus.subscribe(
    'jobs',
    [TOPICS.usage],
    async (event) => {
      if (event.type !== EVENT_TYPES.usageRecorded) return;
      // Every billed call's close passes here; only a video model's can be a job, and the rest cost no query and no
      // parse (a look at the model first: this runs once per billed call of the whole gateway).
      const model = (event.data as { model?: unknown } | null)?.model;
      if (typeof model === 'string' && registry.get(model)?.config.category !== 'video') return;
      const parsed = usageRecordedSchema.safeParse(event.data);
      if (!parsed.success) return void logger.error({ eventId: event.id }, 'dropping malformed usage event');
      const u = parsed.data;
      if (registry.get(u.model)?.config.category !== 'video') return;
      await db.query('UPDATE jobs SET cost_nano = $2 WHERE gateway_request_id = $1 AND account_id = $3 AND status IN ($4, $5, $6)', [
        u.request_id,
        u.outcome === 'settle' ? u.charge_nano : '0',
        u.account_id,
        'succeeded',
        'failed',
        'canceled',
      ]);
    },
    { gatherMs: UNHURRIED_GATHER_MS },
  );
}
