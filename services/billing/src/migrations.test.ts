import { migrations } from './migrations';

describe('billing migrations', () => {
  it('keep the ids existing databases recorded in schema_migrations, in order', () => {
    expect(migrations.map((m) => m.id)).toEqual(['001_ledger']);
  });

  it('001_ledger carries the tables and all three ledger functions from ledger/sql', () => {
    const [ledger] = migrations;
    for (const part of ['CREATE TABLE accounts', 'CREATE TABLE holds', 'CREATE FUNCTION place_hold', 'CREATE FUNCTION close_hold', 'CREATE FUNCTION expire_holds']) {
      expect(ledger.sql).toContain(part);
    }
  });
});
