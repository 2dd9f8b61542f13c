/** Latency samples kept exactly (milliseconds, float) and summarised once, after the run. */
export interface LatencySummary {
  count: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

export class Samples {
  private buf = new Float64Array(1 << 16);
  private n = 0;

  push(ms: number): void {
    if (this.n === this.buf.length) {
      const grown = new Float64Array(this.buf.length * 2);
      grown.set(this.buf);
      this.buf = grown;
    }
    this.buf[this.n++] = ms;
  }

  get count(): number {
    return this.n;
  }

  summary(): LatencySummary {
    const v = this.buf.subarray(0, this.n).sort();
    if (v.length === 0) return { count: 0, p50: Number.NaN, p99: Number.NaN, mean: Number.NaN, max: Number.NaN };
    let sum = 0;
    for (const x of v) sum += x;
    // Nearest rank: the smallest sample with at least p % of the samples at or below it.
    const rank = (p: number) => v[Math.min(v.length - 1, Math.max(0, Math.ceil((p / 100) * v.length) - 1))];
    return { count: v.length, p50: rank(50), p99: rank(99), mean: sum / v.length, max: v[v.length - 1] };
  }
}

/** The middle value, or the mean of the two middle ones: how the bench reads several rounds of one figure. */
export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** CLOCK_MONOTONIC in microseconds: the clock V8 stamps .cpuprofile samples with, the same in every process. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);
