import fs from 'node:fs';
import path from 'node:path';
import { deadLetterFileOf, migrations } from '@gateway/billing';
import { readEnv } from '@gateway/config';
import { openServiceDb } from '@gateway/db';

const USAGE = `pnpm ledger:dead-letters                      the dead letters not yet resolved, one JSON object a line
pnpm ledger:dead-letters all                  every dead letter, resolved ones too
pnpm ledger:dead-letters resolve <seq> <note>  marks one resolved, saying how (after reconciling it)
Reads GATEWAY_DATA_DIR. Stop the gateway first: its PGlite database is one process's.`;

/**
 * The embedded ledger's dead letters (docs/operations.md, "Ledger dead letters"): journal records the tables could
 * never take, kept in billing's ledger_dead_letters, and in the journal directory's dead-letters.jsonl when even that
 * table refused one.
 */
async function main(args: string[]): Promise<void> {
  const env = readEnv(process.env);
  if (env.DATABASE_URL) throw new Error('DATABASE_URL is set: the ledger is then the SQL one, which keeps no dead letters');
  const dataDir = path.resolve(env.GATEWAY_DATA_DIR);
  const db = await openServiceDb('billing', migrations, { dataDir });
  try {
    const [command = 'list', ...rest] = args;
    if (command === 'resolve') {
      const [seq, ...note] = rest;
      if (!/^\d+$/.test(seq ?? '') || note.length === 0) throw new Error(USAGE);
      const done = await db.query(
        'UPDATE ledger_dead_letters SET resolved_at = now(), resolution = $2 WHERE seq = $1 AND resolved_at IS NULL RETURNING seq',
        [seq, note.join(' ')],
      );
      process.stdout.write(done.length > 0 ? `dead letter ${seq} resolved\n` : `no unresolved dead letter ${seq}\n`);
      return;
    }
    if (command !== 'list' && command !== 'all') throw new Error(USAGE);
    const rows = await db.query(
      `SELECT seq::text AS seq, kind, hold_id, account_id, error_code, error, depends_on::text AS depends_on, created_at, resolved_at, resolution, record
         FROM ledger_dead_letters ${command === 'all' ? '' : 'WHERE resolved_at IS NULL'} ORDER BY seq`,
    );
    for (const { record, ...row } of rows) process.stdout.write(`${JSON.stringify({ ...row, record: parsed(String(record)) })}\n`);
    const file = deadLetterFileOf(dataDir);
    if (fs.existsSync(file)) process.stdout.write(`Also in ${file} (dead letters the table refused):\n${fs.readFileSync(file, 'utf8')}`);
  } finally {
    await db.close();
  }
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

main(process.argv.slice(2)).catch((err: Error) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
