import { trace } from '@opentelemetry/api';
import { createMemoryBus } from './memory';
import { withTracing } from './tracing';
import { useInMemoryTracing } from './testing/otel';
import { waitFor } from '@gateway/testing';

describe('withTracing', () => {
  const exporter = useInMemoryTracing();

  it('continues the publisher’s trace in the consumer, across the bus', async () => {
    const bus = withTracing(createMemoryBus());
    const seen: Array<{ traceId?: string; traceparent?: string }> = [];
    await bus.subscribe('g', ['t'], async (event) => {
      seen.push({ traceId: trace.getActiveSpan()?.spanContext().traceId, traceparent: event.headers?.traceparent });
    });
    const tracer = trace.getTracer('test');
    const publisherTrace = await tracer.startActiveSpan('request', async (span) => {
      await bus.publish('t', { id: 'e1', type: 'x.v1', key: 'k', data: {}, headers: { keep: 'me' } });
      span.end();
      return span.spanContext().traceId;
    });
    await waitFor(() => seen.length === 1, 'the consumer to run');
    expect(seen).toHaveLength(1);
    expect(seen[0].traceId).toBe(publisherTrace);
    expect(seen[0].traceparent).toContain(publisherTrace);
    const consumer = exporter.getFinishedSpans().find((s) => s.name === 't process');
    expect(consumer?.spanContext().traceId).toBe(publisherTrace);
    await bus.close();
  });
});
