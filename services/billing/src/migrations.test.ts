import { migrations } from './migrations';

describe('billing migrations', () => {
  it('keep the versioned ids existing databases recorded in schema_migrations, in order', () => {
    expect(migrations.filter((m) => !m.repeatable).map((m) => m.id)).toEqual(['001_ledger']);
  });

  it('001_ledger carries the tables; the three ledger functions replace themselves at every start', () => {
    const [ledger, functions] = migrations;
    for (const part of ['CREATE TABLE accounts', 'CREATE TABLE holds']) expect(ledger.sql).toContain(part);
    expect(functions.repeatable).toBe(true);
    for (const name of ['place_hold', 'close_hold', 'expire_holds']) expect(functions.sql).toContain(`CREATE OR REPLACE FUNCTION ${name}(`);
  });
});
