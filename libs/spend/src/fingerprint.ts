import crypto from 'node:crypto';

/** JSON with every object's keys in order: the same request hashes the same however its client ordered the fields. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value as Record<string, unknown>)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  // A validated body may carry a bigint (max_cost in nano-USD), which JSON.stringify refuses: its digits stand for it.
  if (typeof value === 'bigint') return `${value}n`;
  return JSON.stringify(value) ?? 'null';
}

/**
 * What one Idempotency-Key is bound to: the route (the model, for a queue submit, is in it) and the canonical body.
 * A retry must match it; the same key with anything else is another request, and is refused.
 */
export function requestFingerprint(route: string, body: unknown): string {
  return crypto
    .createHash('sha256')
    .update(`${route.replace(/\/+$/, '')}\n${canonical(body ?? {})}`)
    .digest('hex');
}
