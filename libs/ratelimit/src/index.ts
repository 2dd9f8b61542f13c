export type { MeterResult, RateMeter } from './port';
export { createMemoryMeter, type MemoryMeter, type MemoryMeterOptions } from './memory';
export { createRedisMeter, type RedisMeterOptions } from './redis';
