import crypto from 'node:crypto';
import type { EventBus } from '@gateway/bus';
import type { ModelRegistry } from '@gateway/config';
import { EVENT_TYPES, TOPICS, type EndpointHealth } from '@gateway/events';
import type { Logger } from '@gateway/service-kit';
import type { Circuits } from './circuits';

export interface HealthReporterDeps {
  bus: EventBus;
  circuits: Circuits;
  registry: ModelRegistry;
  logger: Logger;
  /** The service name; an instance id is appended so replicas' reports never share an event id. */
  source: string;
  intervalMs: number;
  now?: () => Date;
}

/**
 * Publishes `endpoint.health.v1` every interval: what real traffic did to each endpoint in the window, and every
 * endpoint whose circuit is not closed. Only the spending processes see upstream attempts and circuits, so the status
 * monitor (catalogue) learns provider health from these reports instead of calling upstreams itself.
 */
export function startHealthReporter(deps: HealthReporterDeps): { stop(): void; report(): Promise<void> } {
  const now = deps.now ?? (() => new Date());
  const source = `${deps.source}:${crypto.randomBytes(4).toString('hex')}`;
  const providerOf = new Map(deps.registry.all().flatMap((m) => m.endpoints.map((e) => [e.key, e.provider.id] as const)));
  let windowStart = now();

  async function report(): Promise<void> {
    const end = now();
    const event = healthReport(source, windowStart, end, deps.circuits, providerOf);
    windowStart = end;
    if (event.endpoints.length === 0) return;
    await deps.bus.publish(TOPICS.endpointHealth, {
      id: `${source}:${event.window_end}`,
      type: EVENT_TYPES.endpointHealth,
      key: source,
      data: event,
    });
  }

  const timer = setInterval(() => {
    report().catch((err) => deps.logger.warn({ err }, 'endpoint health report not published'));
  }, deps.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer), report };
}

/** One window's report: drains the tallies, so each attempt is reported once. */
export function healthReport(source: string, start: Date, end: Date, circuits: Circuits, providerOf: Map<string, string>): EndpointHealth {
  const circuitOf = new Map(circuits.snapshot().map((c) => [c.endpoint, c.state]));
  const rows = new Map<string, EndpointHealth['endpoints'][number]>();
  for (const t of circuits.drainTallies()) {
    const ok = t.attempts - t.failures;
    rows.set(t.endpoint, {
      endpoint: t.endpoint,
      provider: providerOf.get(t.endpoint) ?? t.endpoint.split('/')[0],
      attempts: t.attempts,
      failures: t.failures,
      latency_ms: ok > 0 ? Math.round(t.latencyMsSum / ok) : null,
      circuit: circuitOf.get(t.endpoint) ?? 'closed',
    });
  }
  // An open circuit means no traffic reaches the endpoint, yet it is the clearest sign of trouble: always reported.
  for (const [endpoint, circuit] of circuitOf) {
    if (circuit === 'closed' || rows.has(endpoint)) continue;
    rows.set(endpoint, {
      endpoint,
      provider: providerOf.get(endpoint) ?? endpoint.split('/')[0],
      attempts: 0,
      failures: 0,
      latency_ms: null,
      circuit,
    });
  }
  return { source, window_start: start.toISOString(), window_end: end.toISOString(), endpoints: [...rows.values()] };
}
