import { ROOT_CONTEXT, context } from '@opentelemetry/api';
import type { BusEvent, EventBus } from '@gateway/bus';
import type { Db } from '@gateway/db';
import type { Logger } from '@gateway/service-kit';

/** How soon a relay run that failed (the bus or the database was down) is tried again. */
const RETRY_MS = 500;

/**
 * Publishes the outbox in commit order and deletes what went out. Two relays (two replicas) never publish one row
 * at once (SKIP LOCKED); a crash between publish and delete publishes it again, which consumers absorb by event id.
 */
export function createRelay(db: Db, bus: EventBus, logger: Logger) {
  let timer: NodeJS.Timeout | undefined;
  let retry: NodeJS.Timeout | undefined;
  let stopped = false;
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

  /** Publishes now; a failed run is tried again after RETRY_MS, so a bus outage delays events, never loses them. */
  function wake(): void {
    // Outside the waking request's trace: each event carries the trace of the change that wrote it.
    void context.with(ROOT_CONTEXT, drain).catch((err) => {
      logger.error({ err }, 'outbox relay failed; retrying');
      if (retry || stopped) return;
      retry = setTimeout(() => {
        retry = undefined;
        wake();
      }, RETRY_MS);
      retry.unref();
    });
  }

  return {
    drain,
    /** Publishes soon after a commit, without making the committing request wait for the bus. */
    wake,
    /**
     * Every writer of the outbox wakes the relay after its commit, so the timer is only a safety net: for rows a
     * crashed replica committed and never published. Without `safetyPollMs` (one process alone on its database,
     * embedded) there is none: what a crash left is published by the drain at start, and nothing polls when idle.
     */
    start(safetyPollMs?: number) {
      stopped = false;
      if (safetyPollMs !== undefined) {
        timer = setInterval(wake, safetyPollMs);
        timer.unref();
      }
      wake();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      if (retry) clearTimeout(retry);
      await drain().catch((err) => logger.error({ err }, 'outbox relay failed at shutdown'));
    },
  };
}
export type Relay = ReturnType<typeof createRelay>;
