import fs from 'node:fs';
import type { Db } from '@gateway/db';
import type { Logger, Metrics } from '@gateway/service-kit';
import type { LedgerRecord } from './records';
import { cannotApply, sqlStateOf } from './unappliable';

export interface DeadLettersOptions {
  db: Db;
  logger: Logger;
  /** Where a dead letter goes when even the table refuses it (JSON lines); none: the error log only. */
  file?: string;
  metrics?: Metrics;
}

type Store = 'table' | 'file' | 'log';

/**
 * Journal records the tables can never take, kept for reconciliation (ledger_dead_letters, docs/operations.md)
 * while the write-behind and the replay carry on past them: a record's sequence number is consumed in the
 * transaction that keeps it.
 *
 * What depends on a dead letter: the later records of the same hold that the ledger decided before memory next
 * reloaded from the tables. Without the hold's place (or with its close or expiry missing) they would move `held`
 * and usage for a row the tables do not have, or do not have in that state, and break held = the sum of open holds.
 * They are dead-lettered too, naming the first. A checkpoint has no dependents: a close or an expiry carries its own
 * charge. Records of other holds, the same account's included, are applied: each moves only its own hold's figures,
 * so the tables stay consistent without the dead letter, and one that no longer fits (a place decided against a
 * balance that counted a refused close) is refused by the tables' own checks and dead-lettered on its own. After a
 * reload memory decides from the tables, so from then on the hold's records are its own again (`reloaded`); a
 * start takes back the holds whose window a killed process left open, so its journal's dependents stay skipped.
 */
export class DeadLetters {
  /** Hold id → the seq of its dead letter, while later records of the hold depend on it. */
  private readonly holds = new Map<string, number>();
  private readonly counted: ((store: Store, reason: 'refused' | 'dependent') => void) | undefined;

  private constructor(private readonly opts: DeadLettersOptions) {
    const counter = opts.metrics?.counter(
      'gateway_ledger_dead_letters_total',
      'Ledger journal records the tables could never take, kept for reconciliation instead (reason: refused, or skipped as dependent on one)',
      ['reason', 'store'],
    );
    this.counted = counter && ((store, reason) => counter.inc({ reason, store }));
  }

  static async open(opts: DeadLettersOptions): Promise<DeadLetters> {
    const d = new DeadLetters(opts);
    const open = await opts.db.query<{ hold_id: string; seq: string }>(
      'SELECT hold_id, min(seq)::text AS seq FROM ledger_dead_letters WHERE reloaded_at IS NULL AND hold_id IS NOT NULL GROUP BY hold_id',
    );
    for (const r of open) d.holds.set(r.hold_id, Number(r.seq));
    return d;
  }

  /** The dead letter `record` must be skipped for, if any. */
  dependsOn(record: LedgerRecord): number | undefined {
    if (this.holds.size === 0) return undefined;
    const hold = holdIdOf(record);
    return hold === null ? undefined : this.holds.get(hold);
  }

  /**
   * Keeps `record` (the one after `from`) with why, and moves the tables' position past it. Throws, to be retried,
   * only when the tables cannot be written at all.
   */
  async put(from: number, record: LedgerRecord, why: { error: unknown } | { dependsOn: number }): Promise<void> {
    const dependsOn = 'dependsOn' in why ? why.dependsOn : null;
    const row = {
      seq: record.seq,
      kind: typeof record.t === 'string' ? record.t : null,
      hold: holdIdOf(record),
      account: (record as { h?: { account?: unknown } }).h?.account,
      record: JSON.stringify(record),
      code: 'error' in why ? sqlStateOf(why.error) : null,
      error: 'error' in why ? messageOf(why.error) : `skipped: an earlier record of its hold is dead letter ${dependsOn}`,
    };
    const store = await this.keep(from, row, dependsOn);
    const reason = dependsOn === null ? 'refused' : 'dependent';
    if (row.hold !== null && record.t !== 'checkpoint' && !this.holds.has(row.hold)) this.holds.set(row.hold, record.seq);
    this.counted?.(store, reason);
    this.opts.logger.error(
      { seq: row.seq, record: row.kind, holdId: row.hold, accountId: row.account, code: row.code, error: row.error, dependsOn, store },
      dependsOn === null
        ? 'ledger record the tables cannot take: dead-lettered, the ledger carries on'
        : 'ledger record dead-lettered with the record it depends on',
    );
  }

  /**
   * Memory was reloaded from the tables, which hold everything up to `seq`: later records of a dead-lettered hold
   * were decided on what the tables hold, and no longer depend on its dead letter.
   */
  async reloaded(seq: number): Promise<void> {
    if (this.holds.size === 0) return;
    this.holds.clear();
    await this.opts.db
      .query('UPDATE ledger_dead_letters SET reloaded_at = $1 WHERE reloaded_at IS NULL', [seq])
      // Left unset, the next start skips the hold's later records in its journal too: loud, and only after a crash.
      .catch((err) => this.opts.logger.error({ err }, 'ledger dead letters: marking the reload failed'));
  }

  private async keep(from: number, row: Row, dependsOn: number | null): Promise<Store> {
    const consume = (q: Pick<Db, 'query'>) => q.query('SELECT ledger_write($1, $2, $3::jsonb)', [from, row.seq, '{}']);
    try {
      await this.opts.db.transaction(async (tx) => {
        await consume(tx);
        await tx.query(
          `INSERT INTO ledger_dead_letters (seq, kind, hold_id, account_id, record, error_code, error, depends_on)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (seq) DO NOTHING`,
          [row.seq, row.kind, row.hold, typeof row.account === 'string' ? row.account : null, row.record, row.code, row.error, dependsOn],
        );
      });
      return 'table';
    } catch (err) {
      if (!cannotApply(err)) throw err;
      // The row itself is refused (text PostgreSQL cannot hold): the file keeps it, else the log line does.
      this.opts.logger.error({ err, seq: row.seq }, 'ledger dead letter refused by its table');
      const store = this.toFile(row, dependsOn);
      await consume(this.opts.db);
      return store;
    }
  }

  private toFile(row: Row, dependsOn: number | null): Store {
    const { file } = this.opts;
    if (!file) return 'log';
    const fd = fs.openSync(file, 'a');
    try {
      fs.writeSync(fd, `${JSON.stringify({ ...row, dependsOn, at: new Date().toISOString() })}\n`);
      // On disk before the sequence number is consumed: a crash between the two writes the line again, never loses it.
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    return 'file';
  }
}

interface Row {
  seq: number;
  kind: string | null;
  hold: string | null;
  account: unknown;
  record: string;
  code: string | null;
  error: string;
}

/** A malformed journal line may lack what a record has. */
function holdIdOf(record: LedgerRecord): string | null {
  const id = (record as { h?: { id?: unknown } }).h?.id;
  return typeof id === 'string' ? id : null;
}

/** PostgreSQL text holds no NUL; a message quoting a record's bytes might. */
const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err)).replaceAll('\u0000', '\\u0000');
