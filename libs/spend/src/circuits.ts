import { EndpointSpeed } from './endpoint-speed';

/**
 * Per-endpoint circuit breakers. After `threshold` failures in a row an endpoint is skipped for `openMs`;
 * then one trial call is let through (half-open) and its outcome closes or re-opens the circuit.
 */
export interface CircuitState {
  endpoint: string;
  state: 'closed' | 'open' | 'half_open';
  consecutiveFailures: number;
  openedAt: number | null;
}

/** What real traffic did to one endpoint since the last `drainTallies()`: the status monitor's measurement. */
export interface EndpointTally {
  endpoint: string;
  attempts: number;
  failures: number;
  /** Sum of the successful attempts' ms to answer, for a mean. */
  latencyMsSum: number;
}

export class Circuits {
  /** Recent speed per endpoint, fed by the same outcomes: what routing sorts by. */
  readonly speed = new EndpointSpeed();
  private readonly byEndpoint = new Map<string, { failures: number; openedAt: number | null; trial: boolean }>();
  private tallies = new Map<string, EndpointTally>();

  constructor(
    private readonly threshold = 5,
    private readonly openMs = 30_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a call may go to this endpoint now; claims the half-open trial when there is one. */
  allow(endpoint: string): boolean {
    const c = this.byEndpoint.get(endpoint);
    if (!c || c.openedAt === null) return true;
    if (this.now() - c.openedAt < this.openMs || c.trial) return false;
    c.trial = true;
    return true;
  }

  /** Whether any call could go there now, without claiming anything (for "nothing healthy" checks). */
  isAvailable(endpoint: string): boolean {
    const c = this.byEndpoint.get(endpoint);
    return !c || c.openedAt === null || (!c.trial && this.now() - c.openedAt >= this.openMs);
  }

  /** An attempt that said nothing about the endpoint (the client left): hand back a claimed trial, count nothing. */
  abandon(endpoint: string): void {
    const c = this.byEndpoint.get(endpoint);
    if (c) c.trial = false;
  }

  /** `latencyMs`: how long the endpoint took to answer, when the caller measured it. */
  success(endpoint: string, latencyMs?: number): void {
    this.byEndpoint.delete(endpoint);
    const t = this.tally(endpoint);
    t.attempts += 1;
    t.latencyMsSum += latencyMs ?? 0;
    if (latencyMs !== undefined) this.speed.latency(endpoint, latencyMs);
  }

  failure(endpoint: string): void {
    const t = this.tally(endpoint);
    t.attempts += 1;
    t.failures += 1;
    const c = this.byEndpoint.get(endpoint) ?? { failures: 0, openedAt: null, trial: false };
    c.failures += 1;
    if (c.trial || c.failures >= this.threshold) {
      c.openedAt = this.now();
      c.trial = false;
    }
    this.byEndpoint.set(endpoint, c);
  }

  /** The attempts since the last call, and a fresh start: each health report covers its own window. */
  drainTallies(): EndpointTally[] {
    const out = [...this.tallies.values()];
    this.tallies = new Map();
    return out;
  }

  private tally(endpoint: string): EndpointTally {
    let t = this.tallies.get(endpoint);
    if (!t) {
      t = { endpoint, attempts: 0, failures: 0, latencyMsSum: 0 };
      this.tallies.set(endpoint, t);
    }
    return t;
  }

  snapshot(): CircuitState[] {
    return [...this.byEndpoint.entries()].map(([endpoint, c]) => ({
      endpoint,
      state: c.openedAt === null ? 'closed' : c.trial ? 'half_open' : 'open',
      consecutiveFailures: c.failures,
      openedAt: c.openedAt,
    }));
  }
}
