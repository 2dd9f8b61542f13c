export type { Db, Queryable, Row } from './db';
export { openPg } from './pg';
export { openPglite } from './pglite';
export { migrate, type Migration } from './migrate';
export { openServiceDb } from './open';
