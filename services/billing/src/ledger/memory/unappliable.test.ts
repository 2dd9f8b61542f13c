import { MalformedRecords, cannotApply } from './unappliable';

const pgError = (code: string) => Object.assign(new Error(`sqlstate ${code}`), { code });

describe('which failed ledger writes are dead-lettered rather than retried', () => {
  it.each([
    ['54000', 'an index row too large (the 3 KB Idempotency-Key)'],
    ['23505', 'a unique index'],
    ['23514', 'a CHECK'],
    ['22003', 'a number out of range'],
    ['22P05', 'text PostgreSQL cannot hold'],
    ['42703', 'a column that does not exist'],
  ])('%s, %s: the same write fails the same way every time', (code) => {
    expect(cannotApply(pgError(code))).toBe(true);
  });

  it('a record a batch cannot be built from', () => {
    expect(cannotApply(new MalformedRecords(new TypeError("Cannot read properties of undefined (reading 'id')")))).toBe(true);
  });

  it.each([
    ['08006', 'a lost connection'],
    ['40001', 'a serialization failure'],
    ['53100', 'a full disk'],
    ['57P01', 'an administrator shutdown'],
    ['XX000', 'an internal error'],
    ['P0001', "ledger_write's own gap check, about the position, not a record"],
  ])('%s, %s: retried', (code) => {
    expect(cannotApply(pgError(code))).toBe(false);
  });

  it('an error with no SQLSTATE (a PGlite worker gone, a file system error code) is retried', () => {
    expect(cannotApply(new Error('the database is closed'))).toBe(false);
    expect(cannotApply(Object.assign(new Error('no space'), { code: 'ENOSPC' }))).toBe(false);
    expect(cannotApply(undefined)).toBe(false);
  });
});
