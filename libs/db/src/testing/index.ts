/** @gateway/db/testing: a throwaway database on either engine, and one that fails on demand; tests only. */
export { ENGINES, describeOnEngines, openTestDb, type Engine, type TestDb } from './temp-db';
export { withFaults, type FaultyDb } from './faults';
