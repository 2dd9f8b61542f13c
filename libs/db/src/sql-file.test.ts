import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sqlFileMigration } from './sql-file';

describe('sqlFileMigration', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-sql-'));
    fs.writeFileSync(path.join(dir, 'tables.sql'), 'CREATE TABLE t (id int);\n');
    fs.writeFileSync(path.join(dir, 'fn.sql'), '-- a comment\nCREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('one migration from several files is their SQL in the order given, under the given id', () => {
    expect(sqlFileMigration('001_x', dir, ['tables.sql', 'fn.sql'])).toEqual({
      id: '001_x',
      sql: 'CREATE TABLE t (id int);\n\n-- a comment\nCREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n',
    });
  });

  it('a missing file fails at load, naming the migration and the file', () => {
    expect(() => sqlFileMigration('001_x', dir, ['tables.sql', 'gone.sql'])).toThrow(/migration 001_x: cannot read .*gone\.sql/);
  });

  it('a migration without files is refused', () => {
    expect(() => sqlFileMigration('001_x', dir, [])).toThrow(/001_x: no SQL files/);
  });
});
