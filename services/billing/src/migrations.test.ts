import crypto from 'node:crypto';
import { LEDGER_FUNCTIONS_VERSION, migrations } from './migrations';

/**
 * The checksum of the ledger functions' SQL at each version. A database keeps the highest version any binary
 * installed, so SQL changed without a new version would never reach a database that has this one: change the
 * files, raise LEDGER_FUNCTIONS_VERSION, and add its checksum here.
 */
const FUNCTIONS_CHECKSUMS: Record<number, string> = {
  1: '3be30e57fc4f594ded8d454a3e44931ac54c718c01856914f6cd0cd00d6f5e0f',
  2: '433a2469250316f38e0383d3cf5d2adef662a5397bd5935787d0f1b054545e8e',
  3: 'd97769c6f7eb7e5e6c6cb93fb3eda9b616a986d6cb96a1bef82263cb0fbd2832',
};

describe('billing migrations', () => {
  it('keep the versioned ids existing databases recorded in schema_migrations, in order', () => {
    expect(migrations.filter((m) => !m.repeatable).map((m) => m.id)).toEqual([
      '001_ledger',
      '002_usage_estimated',
      '003_ledger_journal',
      '004_hold_checkpoints',
      '005_ledger_dead_letters',
      '006_idempotent_answers',
      '007_usage_provider',
      '008_token_details',
      '009_hot_tables_without_foreign_keys',
    ]);
  });

  it('001_ledger carries the tables; the ledger functions replace themselves (CREATE OR REPLACE)', () => {
    const ledger = migrations.find((m) => m.id === '001_ledger')!;
    const functions = migrations.find((m) => m.repeatable)!;
    for (const part of ['CREATE TABLE accounts', 'CREATE TABLE holds']) expect(ledger.sql).toContain(part);
    expect(functions.repeatable).toBe(true);
    for (const name of [
      'place_hold',
      'place_holds',
      'close_hold',
      'close_holds',
      'write_usage_record',
      'checkpoint_hold',
      'expire_hold',
      'expire_these',
      'sweep_holds',
      'expire_holds',
      'ledger_write',
    ])
      expect(functions.sql).toContain(`CREATE OR REPLACE FUNCTION ${name}(`);
  });

  it('the ledger functions carry a version, and their SQL is the one that version was released with', () => {
    const functions = migrations.find((m) => m.repeatable)!;
    expect(functions.version).toBe(LEDGER_FUNCTIONS_VERSION);
    const sum = crypto.createHash('sha256').update(functions.sql).digest('hex');
    expect({ version: LEDGER_FUNCTIONS_VERSION, checksum: sum }).toEqual({
      version: LEDGER_FUNCTIONS_VERSION,
      checksum: FUNCTIONS_CHECKSUMS[LEDGER_FUNCTIONS_VERSION],
    });
  });

  it('002_usage_estimated adds the flag with a default, so records written before it read as reported usage', () => {
    expect(migrations.find((m) => m.id === '002_usage_estimated')!.sql).toContain(
      'ALTER TABLE usage_records ADD COLUMN usage_estimated boolean NOT NULL DEFAULT false',
    );
  });

  it("003_ledger_journal starts the embedded ledger's write-behind position at 0, in one row", () => {
    const sql = migrations.find((m) => m.id === '003_ledger_journal')!.sql;
    expect(sql).toContain('CREATE TABLE ledger_journal');
    expect(sql).toContain('INSERT INTO ledger_journal DEFAULT VALUES');
  });
});
