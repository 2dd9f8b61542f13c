/** How much one new call moves an endpoint's figure: recent calls dominate, one outlier does not. */
const WEIGHT_OF_NEWEST = 0.3;

export interface SpeedFigures {
  /** ms from the start of an attempt to the endpoint's answer (a stream's first chunk). */
  latencyMs?: number;
  /** Completion tokens per second over a whole successful call. */
  tokensPerSecond?: number;
}

/**
 * Each endpoint's recent speed as this process saw it, for `provider.sort` and `routing: lowest_latency`. The status
 * monitor (catalogue) only receives windowed health reports from every spending process and never hands figures
 * back, so routing reads these in-process moving averages instead: no bus round trip, no shared state, and a fresh
 * process starts with no figures (endpoints then keep the operator's order).
 */
export class EndpointSpeed {
  private readonly figures = new Map<string, SpeedFigures>();

  latency(endpoint: string, ms: number): void {
    if (!(ms >= 0)) return;
    const f = this.entry(endpoint);
    f.latencyMs = f.latencyMs === undefined ? ms : f.latencyMs + WEIGHT_OF_NEWEST * (ms - f.latencyMs);
  }

  /** A call that produced no tokens (an embedding, an image) says nothing about throughput and is ignored. */
  throughput(endpoint: string, tokens: number, ms: number): void {
    if (!(tokens > 0) || !(ms > 0)) return;
    const rate = (tokens * 1000) / ms;
    const f = this.entry(endpoint);
    f.tokensPerSecond = f.tokensPerSecond === undefined ? rate : f.tokensPerSecond + WEIGHT_OF_NEWEST * (rate - f.tokensPerSecond);
  }

  of(endpoint: string): SpeedFigures {
    return { ...this.figures.get(endpoint) };
  }

  private entry(endpoint: string): SpeedFigures {
    let f = this.figures.get(endpoint);
    if (!f) {
      f = {};
      this.figures.set(endpoint, f);
    }
    return f;
  }
}
