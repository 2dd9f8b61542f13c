import type { BusErrorHandler } from './errors';

/** The part of a Prometheus registry this needs (service-kit's `Metrics` has it), so the bus depends on no metrics library. */
export interface BusMetrics {
  counter(name: string, help: string, labels: string[]): { inc(labels: Record<string, string>, value?: number): void };
}

/**
 * An operator alerts on a number, not on a log line: every handler failure, retry, dead letter, refused publish
 * and drop is counted by adapter, action, group and topic, then handed on.
 */
export function countingFaults(metrics: BusMetrics | undefined, next: BusErrorHandler): BusErrorHandler {
  if (!metrics) return next;
  const faults = metrics.counter(
    'gateway_bus_faults_total',
    'Faults the event bus reported, by adapter, what became of the event (will-retry, dead-lettered, refused, dropped, none), group and topic',
    ['adapter', 'action', 'group', 'topic'],
  );
  return (err, ctx) => {
    faults.inc({ adapter: ctx.adapter, action: ctx.action, group: ctx.group ?? '', topic: ctx.topic ?? '' });
    next(err, ctx);
  };
}
