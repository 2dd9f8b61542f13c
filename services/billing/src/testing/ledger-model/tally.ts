/** Counters over all runs, for the suite's summary line. */
export class Tally {
  runs = 0;
  batches = 0;
  concurrentBatches = 0;
  ops = 0;
  readonly outcomes = new Map<string, number>();
  count(what: string): void {
    this.outcomes.set(what, (this.outcomes.get(what) ?? 0) + 1);
  }
  summary(): string {
    const o = [...this.outcomes.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k} ${v}`);
    return `${this.runs} runs, ${this.batches} batches (${this.concurrentBatches} concurrent), ${this.ops} operations: ${o.join(', ')}`;
  }
}
