import client from 'prom-client';

export interface Metrics {
  registry: client.Registry;
  httpDuration: client.Histogram<'service' | 'route' | 'status'>;
  counter(name: string, help: string, labels: string[]): client.Counter<string>;
  histogram(name: string, help: string, labels: string[], buckets?: number[]): client.Histogram<string>;
  /** A gauge read at scrape time: `read` returns the current value per label set. */
  gauge(name: string, help: string, labels: string[], read: () => Array<[Record<string, string>, number]>): void;
}

const EVENT_LOOP_SAMPLE_MS = 1_000;

/** One registry per process; in the embedded gateway every service shares it, so names carry no service prefix. */
export function createMetrics(): Metrics {
  const registry = new client.Registry();
  // The event-loop lag histogram samples on a timer of this period, which wakes an idle process each time: prom-client's
  // 10 ms default was a hundred wake-ups a second in every process, most of an idle gateway's CPU. One a second still
  // shows a loop held up under load, over any scrape interval.
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  const made = new Map<string, client.Metric<string>>();
  const metrics: Metrics = {
    registry,
    httpDuration: new client.Histogram({
      name: 'gateway_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by service, route and status',
      labelNames: ['service', 'route', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    counter(name, help, labels) {
      if (!made.has(name)) made.set(name, new client.Counter({ name, help, labelNames: labels, registers: [registry] }));
      return made.get(name) as client.Counter<string>;
    },
    gauge(name, help, labels, read) {
      if (made.has(name)) return;
      made.set(
        name,
        new client.Gauge({
          name,
          help,
          labelNames: labels,
          registers: [registry],
          collect() {
            this.reset();
            for (const [l, v] of read()) this.set(l, v);
          },
        }),
      );
    },
    histogram(name, help, labels, buckets) {
      if (!made.has(name)) made.set(name, new client.Histogram({ name, help, labelNames: labels, buckets, registers: [registry] }));
      return made.get(name) as client.Histogram<string>;
    },
  };
  return metrics;
}
