import { SpanKind, context, propagation, trace } from '@opentelemetry/api';
import type { EventBus } from './port';

const tracer = trace.getTracer('@gateway/bus');

/**
 * Carries trace context across the bus: the publisher's context rides in the event's headers (W3C traceparent),
 * and each delivery runs in a consumer span that continues it. With no OpenTelemetry SDK started, the API is a
 * no-op and this costs a header copy.
 */
export function withTracing(bus: EventBus): EventBus {
  return {
    kind: bus.kind,
    ping: () => bus.ping(),
    checkConsumers: () => bus.checkConsumers(),
    close: () => bus.close(),
    publish(topic, event) {
      const headers: Record<string, string> = { ...(event.headers ?? {}) };
      propagation.inject(context.active(), headers);
      return bus.publish(topic, { ...event, headers });
    },
    subscribe(group, topics, handler, opts) {
      return bus.subscribe(
        group,
        topics,
        (event, topic) => {
          const parent = propagation.extract(context.active(), event.headers ?? {});
          return tracer.startActiveSpan(
            `${topic} process`,
            {
              kind: SpanKind.CONSUMER,
              attributes: { 'messaging.destination.name': topic, 'messaging.consumer.group.name': group, 'messaging.message.id': event.id },
            },
            parent,
            async (span) => {
              try {
                return await handler(event, topic);
              } catch (e) {
                span.recordException(e as Error);
                throw e;
              } finally {
                span.end();
              }
            },
          );
        },
        opts,
      );
    },
  };
}
