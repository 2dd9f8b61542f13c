/** Helpers shared by the test suites only (never imported by product code). */
export { IN_CI, describeOrSkip, needServer, type ServerNeed } from './servers';
export { pause, waitFor, within } from './wait';
export { REDIS, REDIS_URL, connectTestRedis, deleteKeysUnder, useTestRedis, type TestRedisClient, type TestRedisClass } from './redis';
export { KAFKA, KAFKA_BROKERS } from './kafka';
export { REPO_ROOT, runEntry, type RunningProcess } from './process';
export {
  TLS_CERT_PATH,
  TLS_KEY_PATH,
  requireTrustedTestCert,
  startHttpsReceiver,
  type HttpsReceiver,
  type ReceivedRequest,
} from './https-receiver';
