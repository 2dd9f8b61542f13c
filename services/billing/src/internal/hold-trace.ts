import { ROOT_CONTEXT, SpanKind, SpanStatusCode, propagation, trace } from '@opentelemetry/api';

const tracer = trace.getTracer('@gateway/billing');

/**
 * Runs one batched hold in a span of the trace its request came with, so each request's trace shows billing's side
 * of its hold even when the hold travelled in another request's batch. Without a carrier (tracing off) it just runs.
 */
export function inTraceOf<T>(carrier: { traceparent: string; tracestate?: string } | undefined, place: () => Promise<T>): Promise<T> {
  if (!carrier) return place();
  const parent = propagation.extract(ROOT_CONTEXT, carrier);
  return tracer.startActiveSpan('billing.hold', { kind: SpanKind.SERVER }, parent, async (span) => {
    try {
      return await place();
    } catch (e) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
      throw e;
    } finally {
      span.end();
    }
  });
}
