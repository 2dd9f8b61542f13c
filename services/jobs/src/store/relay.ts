import { ROOT_CONTEXT, context } from '@opentelemetry/api';
import type { BusEvent, EventBus } from '@gateway/bus';
import type { Db } from '@gateway/db';
import type { Logger } from '@gateway/service-kit';

/**
 * Publishes the outbox in commit order and deletes what went out. Two relays (two replicas) never publish one row
 * at once (SKIP LOCKED); a crash between publish and delete publishes it again, which consumers absorb by event id.
 */
export function createRelay(db: Db, bus: EventBus, logger: Logger) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<number> | undefined;

  async function runOnce(batch = 100): Promise<number> {
    return db.transaction(async (tx) => {
      const rows = await tx.query<{ seq: string; topic: string; event: BusEvent }>(
        'SELECT seq, topic, event FROM outbox ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED',
        [batch],
      );
      for (const row of rows) await bus.publish(row.topic, row.event);
      if (rows.length) await tx.query('DELETE FROM outbox WHERE seq = ANY($1::bigint[])', [rows.map((r) => r.seq)]);
      return rows.length;
    });
  }

  /** Runs until the outbox is empty; concurrent calls share one run. */
  async function drain(): Promise<void> {
    if (running) {
      await running.catch(() => undefined);
    }
    running = (async () => {
      let total = 0;
      for (let n = await runOnce(); n > 0; n = await runOnce()) total += n;
      return total;
    })();
    try {
      await running;
    } finally {
      running = undefined;
    }
  }

  return {
    drain,
    /** Publishes soon after a commit, without making the committing request wait for the bus. */
    wake() {
      // Outside the waking request's trace: each event carries the trace of the change that wrote it.
      void context.with(ROOT_CONTEXT, drain).catch((err) => logger.error({ err }, 'outbox relay failed; retrying on the next tick'));
    },
    start(intervalMs = 500) {
      timer = setInterval(() => this.wake(), intervalMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await drain().catch((err) => logger.error({ err }, 'outbox relay failed at shutdown'));
    },
  };
}
export type Relay = ReturnType<typeof createRelay>;
