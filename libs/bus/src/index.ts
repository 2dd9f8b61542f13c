export type { BusEvent, EventBus, Handler, SubscribeOptions, Subscription } from './port';
export type { BusErrorContext, BusErrorHandler } from './errors';
export { logBusError } from './errors';
export { createMemoryBus, type MemoryBusOptions } from './memory';
export { createRedisBus, type RedisBusOptions } from './redis-streams';
export { createKafkaBus, type KafkaBusOptions } from './kafka';
export { openBus, type OpenBusOptions } from './open';
export type { BusMetrics } from './fault-metric';
export { withTracing } from './tracing';
