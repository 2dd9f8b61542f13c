export type { MeterResult, RateMeter } from './port';
export { createMemoryMeter } from './memory';
export { createRedisMeter } from './redis';
