import type { Metrics } from '@gateway/service-kit';

const COUNTERS = {
  attempt: ['gateway_upstream_attempts_total', 'Upstream attempts by endpoint and outcome', ['endpoint', 'outcome']],
  close: ['gateway_holds_closed_total', 'Holds settled or released, by outcome and request status', ['outcome', 'status']],
  // A float is fine for a dashboard; the ledger itself never sees this figure.
  charge: ['gateway_charged_usd_total', 'USD charged, by model (for dashboards; the ledger is the record)', ['model']],
} as const;

/** Adds to one of the money flow's Prometheus counters; a no-op without metrics (unit tests, scripts). */
export function count(metrics: Metrics | undefined, name: keyof typeof COUNTERS, labels: Record<string, string>, by = 1): void {
  if (!metrics) return;
  const [metric, help, labelNames] = COUNTERS[name];
  metrics.counter(metric, help, [...labelNames]).inc(labels, by);
}
