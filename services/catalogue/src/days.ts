const DAY_MS = 86_400_000;

/** The UTC calendar day of an instant, YYYY-MM-DD. */
export function utcDay(t: Date): string {
  return t.toISOString().slice(0, 10);
}

/** The `n` UTC days ending with the day of `now`, oldest first. */
export function trailingDays(now: Date, n: number): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: n }, (_, i) => new Date(today - (n - 1 - i) * DAY_MS).toISOString().slice(0, 10));
}
