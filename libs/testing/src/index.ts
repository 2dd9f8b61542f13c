/** Helpers shared by the test suites only (never imported by product code). */
export { IN_CI, describeOrSkip, needServer, type ServerNeed } from './servers';
export { pause, waitFor, within } from './wait';
export { REDIS, REDIS_URL, connectTestRedis, deleteKeysUnder, useTestRedis, type TestRedisClient, type TestRedisClass } from './redis';
export { KAFKA, KAFKA_BROKERS } from './kafka';
