import type { ModelRegistry } from '@gateway/config';
import type { EndpointReport } from './store';
import type { Outcome } from './vocabulary';

/** A check answering slower than this is degraded; no answer within TIMEOUT_MS is down. */
export const SLOW_MS = 2_000;
export const TIMEOUT_MS = 5_000;
/** An endpoint failing at least this share of its attempts in a report is unhealthy. */
export const FAILING_SHARE = 0.5;
/** The user agent of every probe, so a provider (or a test's fake of one) can tell them from API calls. */
export const STATUS_PROBE_AGENT = 'gateway-status-monitor';

export interface Measurement {
  outcome: Outcome;
  latencyMs: number;
}

/** One component's measurement; undefined when there is nothing to measure (the component is UNCONFIGURED). */
export type Check = () => Promise<Measurement | undefined>;

export type Clock = () => number;

async function timed<T>(fn: (signal: AbortSignal) => Promise<T>, clock: Clock): Promise<{ value?: T; error?: unknown; ms: number }> {
  const start = clock();
  const signal = AbortSignal.timeout(TIMEOUT_MS);
  try {
    const value = await Promise.race([
      fn(signal),
      new Promise<never>((_, reject) => signal.addEventListener('abort', () => reject(new Error('timed out')), { once: true })),
    ]);
    return { value, ms: clock() - start };
  } catch (error) {
    return { error, ms: clock() - start };
  }
}

const bySpeed = (ms: number): Outcome => (ms > SLOW_MS ? 'degraded' : 'ok');

/**
 * `api`: the public API as a client sees it, GET /v1/models/count (no key, so it spends nothing and needs no
 * account). 200 is ok (degraded when slow), 429 degraded (it answered, but turned a client away), anything else down.
 */
export function apiCheck(baseUrl: () => string | undefined, clock: Clock = Date.now): Check {
  return async () => {
    const url = baseUrl();
    if (!url) return undefined;
    const r = await timed(async (signal) => {
      const res = await fetch(`${url}/v1/models/count`, { signal, headers: { 'user-agent': STATUS_PROBE_AGENT } });
      await res.arrayBuffer();
      return res.status;
    }, clock);
    if (r.value === 200) return { outcome: bySpeed(r.ms), latencyMs: r.ms };
    return { outcome: r.value === 429 ? 'degraded' : 'down', latencyMs: r.ms };
  };
}

/** `payments`: billing's ping (its ledger database, in process or over the fleet's internal API). */
export function paymentsCheck(ping: (() => Promise<void>) | undefined, clock: Clock = Date.now): Check {
  return async () => {
    if (!ping) return undefined;
    const r = await timed(() => ping(), clock);
    return { outcome: r.error === undefined ? bySpeed(r.ms) : 'down', latencyMs: r.ms };
  };
}

export interface StoragePing {
  name: string;
  ping(): Promise<void>;
}

/** `storage`: every database and Redis pinged at once; some failing is degraded, all failing down. */
export function storageCheck(pings: StoragePing[], clock: Clock = Date.now): Check {
  return async () => {
    if (pings.length === 0) return undefined;
    const results = await Promise.all(pings.map((p) => timed(() => p.ping(), clock)));
    const failed = results.filter((r) => r.error !== undefined).length;
    const slowest = Math.max(...results.map((r) => r.ms));
    const outcome: Outcome = failed === results.length ? 'down' : failed > 0 ? 'degraded' : bySpeed(slowest);
    return { outcome, latencyMs: slowest };
  };
}

/** What the providers check knows of one endpoint: real traffic's verdict, or a probe's. */
interface EndpointVerdict {
  healthy: boolean;
  latencyMs: number | null;
}

/**
 * `providers`: each endpoint of an available model. Where a spending service reported on it recently (real traffic or
 * a circuit not closed), that report decides: an open or half-open circuit, or at least half the attempts failing, is
 * unhealthy. Elsewhere a simulated provider is healthy without a call, and any other is probed: its base_url answering
 * any HTTP status below 500 is healthy. All healthy is ok, none healthy down, anything between degraded.
 */
export function providersCheck(
  registry: ModelRegistry,
  reports: () => Promise<EndpointReport[]>,
  probe: (baseUrl: string, signal: AbortSignal) => Promise<number>,
  clock: Clock = Date.now,
): Check {
  const endpoints = registry
    .all()
    .filter((m) => m.config.status === 'available')
    .flatMap((m) => m.endpoints);
  const unique = [...new Map(endpoints.map((e) => [e.key, e])).values()];
  return async () => {
    if (unique.length === 0) return undefined;
    const byEndpoint = groupReports(await reports());
    const probes = new Map<string, Promise<EndpointVerdict>>();
    const probeOnce = (baseUrl: string) => {
      let p = probes.get(baseUrl);
      if (!p) {
        p = timed((signal) => probe(baseUrl, signal), clock).then((r) => ({
          healthy: r.error === undefined && (r.value as number) < 500,
          latencyMs: r.ms,
        }));
        probes.set(baseUrl, p);
      }
      return p;
    };
    const verdicts = await Promise.all(
      unique.map(async (e): Promise<EndpointVerdict> => {
        const traffic = byEndpoint.get(e.key);
        if (traffic) return traffic;
        if (e.provider.kind === 'simulated' || !e.provider.base_url) return { healthy: true, latencyMs: null };
        return probeOnce(e.provider.base_url);
      }),
    );
    const healthy = verdicts.filter((v) => v.healthy).length;
    const measured = verdicts.map((v) => v.latencyMs).filter((ms): ms is number => ms !== null);
    const latencyMs = measured.length ? Math.round(measured.reduce((a, b) => a + b, 0) / measured.length) : 0;
    const outcome: Outcome = healthy === verdicts.length ? 'ok' : healthy === 0 ? 'down' : 'degraded';
    return { outcome, latencyMs };
  };
}

/** Several processes may report one endpoint: their attempts add up, and any circuit not closed counts. */
function groupReports(reports: EndpointReport[]): Map<string, EndpointVerdict> {
  const sums = new Map<string, { attempts: number; failures: number; latencySum: number; latencyN: number; circuitOpen: boolean }>();
  for (const r of reports) {
    const s = sums.get(r.endpoint) ?? { attempts: 0, failures: 0, latencySum: 0, latencyN: 0, circuitOpen: false };
    s.attempts += r.attempts;
    s.failures += r.failures;
    if (r.latency_ms !== null) {
      s.latencySum += r.latency_ms;
      s.latencyN += 1;
    }
    s.circuitOpen ||= r.circuit !== 'closed';
    sums.set(r.endpoint, s);
  }
  const out = new Map<string, EndpointVerdict>();
  for (const [endpoint, s] of sums) {
    if (!s.circuitOpen && s.attempts === 0) continue;
    const failing = s.circuitOpen || s.failures >= s.attempts * FAILING_SHARE;
    out.set(endpoint, { healthy: !failing, latencyMs: s.latencyN ? Math.round(s.latencySum / s.latencyN) : null });
  }
  return out;
}

/** The light probe: one GET of the provider's base URL, no key, body discarded; the status code is what counts. */
export async function httpProbe(baseUrl: string, signal: AbortSignal): Promise<number> {
  const res = await fetch(baseUrl, { signal, redirect: 'manual', headers: { 'user-agent': STATUS_PROBE_AGENT } });
  await res.body?.cancel();
  return res.status;
}
