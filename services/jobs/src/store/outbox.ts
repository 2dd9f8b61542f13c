import { context, propagation } from '@opentelemetry/api';
import type { BusEvent, EventBus } from '@gateway/bus';
import type { Queryable } from '@gateway/db';
import { EVENT_TYPES, TOPICS, type JobState } from '@gateway/events';
import type { JobRow } from './job-row';

/** Adds an event to the outbox inside the caller's transaction: it is published only if the change commits. */
export async function enqueue(tx: Queryable, topic: string, event: BusEvent): Promise<void> {
  // The trace of the change that wrote the event rides with it: the relay publishes later, outside that request.
  const headers: Record<string, string> = { ...(event.headers ?? {}) };
  propagation.inject(context.active(), headers);
  await tx.query('INSERT INTO outbox (topic, event) VALUES ($1, $2::jsonb)', [topic, JSON.stringify({ ...event, headers })]);
}

/**
 * A bus whose publish writes to the outbox of `tx`: a HoldCloser given it closes the hold in the same transaction
 * as the job's state change, so a crash either keeps both or neither.
 */
export function outboxBus(tx: Queryable, real: EventBus): EventBus {
  return {
    kind: real.kind,
    publish: (topic, event) => enqueue(tx, topic, event),
    subscribe: (...args) => real.subscribe(...args),
    ping: () => real.ping(),
    checkConsumers: () => real.checkConsumers(),
    close: async () => undefined,
  };
}

/** The job's new state as an event, keyed by job so a follower sees its changes in order. */
export function jobStateEvent(
  job: Pick<JobRow, 'id' | 'account_id' | 'model' | 'category' | 'status' | 'gateway_request_id' | 'error'>,
): BusEvent<JobState> {
  return {
    id: `${job.id}:${job.status}`,
    type: EVENT_TYPES.jobState,
    key: job.id,
    data: {
      job_id: job.id,
      account_id: job.account_id,
      model: job.model,
      category: job.category,
      status: job.status,
      gateway_request_id: job.gateway_request_id,
      error_code: job.error?.code ?? null,
      at: new Date().toISOString(),
    },
  };
}

export const enqueueJobState = (tx: Queryable, job: Parameters<typeof jobStateEvent>[0]) => enqueue(tx, TOPICS.jobs, jobStateEvent(job));
