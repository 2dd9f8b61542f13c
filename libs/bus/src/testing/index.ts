/** @gateway/bus/testing: for other packages' tests only, never product code. */
export { useInMemoryTracing } from './otel';
// A test that writes or reads a topic behind the bus's back (a raw Redis stream, a Kafka group's offsets) needs the
// bus's own encoding and group naming, not a copy of them.
export { encodeEvent } from '../codec';
export { kafkaGroupId } from '../kafka';
