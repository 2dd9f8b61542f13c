import type { ResolvedEndpoint } from '@gateway/config';
import { z } from 'zod';
import { UpstreamError } from './upstream-error';

/**
 * The most tokens one figure may say. The ledger stores token counts in PostgreSQL `integer` columns, so anything
 * above would fail the settle's insert; no context window comes near it, so a larger figure is a broken upstream.
 */
export const MAX_REPORTED_TOKENS = 2 ** 31 - 1;

/**
 * A token count as the gateway bills it. No coercion: "010" is not 10 but a malformed answer. zod's int() also
 * refuses fractions, NaN and the infinities.
 */
export const tokenCount = z.number().int().nonnegative().max(MAX_REPORTED_TOKENS);

/** The answer as the schema reads it, or the upstream's fault (a protocol failure, so the next endpoint may take over). */
export function parsed<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new UpstreamError('protocol', `upstream ${what} is malformed: ${issueOf(r.error)}`);
  return r.data;
}

/** The first problem zod found, with where it is: enough for a log line, never the upstream's whole value. */
export function issueOf(error: z.ZodError): string {
  const first = error.issues[0];
  if (!first) return 'unknown';
  return first.path.length ? `${first.path.join('.')}: ${first.message}` : first.message;
}

/** Told of every usage figure an upstream sent that the gateway would not bill (the count is billed instead). */
export type MalformedUsage = (ep: ResolvedEndpoint, issue: string) => void;

/**
 * The usage an answer reported, when the schema takes it. Absent (undefined, or null as streams send it before
 * the last chunk) is simply absent; present but malformed is reported, then treated as absent, so every route
 * bills the gateway's own count exactly as it does when an upstream reports nothing.
 */
export function usageOrNone<T>(schema: z.ZodType<T>, raw: unknown, onMalformed: (issue: string) => void): T | undefined {
  if (raw === undefined || raw === null) return undefined;
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  onMalformed(issueOf(r.error));
  return undefined;
}

/** The structural parts of pino and of the service kit's metrics that the report uses (upstreams depends on neither). */
export interface UpstreamWatch {
  logger?: { warn(obj: object, msg: string): void };
  metrics?: { counter(name: string, help: string, labels: string[]): { inc(labels: Record<string, string>): void } };
}

/** Logs and counts malformed usage per endpoint, so an operator sees which provider sends it and how often. */
export function malformedUsageReport(watch: UpstreamWatch): MalformedUsage {
  return (ep, issue) => {
    watch.logger?.warn(
      { endpoint: ep.key, provider: ep.provider.id, model: ep.upstreamModel, issue },
      "upstream reported malformed usage; billing the gateway's own token count",
    );
    watch.metrics
      ?.counter('gateway_upstream_malformed_usage_total', "Upstream usage figures refused and replaced by the gateway's own count, by endpoint", [
        'endpoint',
      ])
      .inc({ endpoint: ep.key });
  };
}
