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

export class Circuits {
  private readonly byEndpoint = new Map<string, { failures: number; openedAt: number | null; trial: boolean }>();

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

  success(endpoint: string): void {
    this.byEndpoint.delete(endpoint);
  }

  failure(endpoint: string): void {
    const c = this.byEndpoint.get(endpoint) ?? { failures: 0, openedAt: null, trial: false };
    c.failures += 1;
    if (c.trial || c.failures >= this.threshold) {
      c.openedAt = this.now();
      c.trial = false;
    }
    this.byEndpoint.set(endpoint, c);
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
