import type { Db, Queryable, Row } from '../db';

/**
 * Test suites only: a Db that fails on demand, the fault injector at the storage boundary. Callers see what a
 * real outage looks like to them (a rejected query), so a test can prove what they do about it: retry, redeliver,
 * never apply twice.
 */
export interface FaultyDb extends Db {
  /** From now on every statement fails without reaching the database, until up(). */
  down(): void;
  up(): void;
  /** The next statement runs and commits, then its answer is lost: the caller sees a failure for a write that happened. */
  loseNextAnswer(): void;
  /** Statements that failed so far (refused while down, or answered with a lost answer). */
  readonly failures: number;
}

export function withFaults(db: Db): FaultyDb {
  let isDown = false;
  let loseNext = false;
  let failures = 0;

  const outage = () => {
    failures++;
    return Object.assign(new Error('connect ECONNREFUSED (injected fault: database down)'), { code: 'ECONNREFUSED' });
  };
  async function run<T>(statement: () => Promise<T>): Promise<T> {
    if (isDown) throw outage();
    const out = await statement();
    if (loseNext) {
      loseNext = false;
      throw outage();
    }
    return out;
  }
  const wrap = (q: Queryable): Queryable => ({
    query: <T extends Row>(sql: string, params?: unknown[]) => run(() => q.query<T>(sql, params)),
    exec: (sql: string) => run(() => q.exec(sql)),
  });
  const direct = wrap(db);

  return {
    kind: db.kind,
    query: direct.query,
    exec: direct.exec,
    transaction: (fn) => run(() => db.transaction((tx) => fn(wrap(tx)))),
    ping: () => run(() => db.ping()),
    close: () => db.close(),
    down: () => void (isDown = true),
    up: () => void (isDown = false),
    loseNextAnswer: () => void (loseNext = true),
    get failures() {
      return failures;
    },
  };
}
