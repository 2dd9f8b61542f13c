import path from 'node:path';
import type { HoldRequest, Hold } from '@gateway/billing-client';
import type { Db } from '@gateway/db';
import type { HoldCheckpoint, HoldClose } from '@gateway/events';
import type { Logger, Metrics } from '@gateway/service-kit';
import { GatewayError } from '@gateway/errors';
import { type CloseResult, type Ledger, createLedger, holdFromRow } from '../holds';
import { newHoldId } from '../ids';
import { type AccountState, Book, FINISHED_RETENTION_MS, type MemHold } from './book';
import { DeadLetters } from './dead-letters';
import { FileJournal, type FileJournalOptions, type Journal, noJournal, readJournal } from './journal';
import type { LedgerRecord, UnnumberedRecord } from './records';
import { WriteBehind } from './write-behind';

/**
 * The longest an exclusive change waits for earlier changes and for the write-behind to drain. Past it the change
 * is refused (503, retryable) instead of holding every hold and settle behind it: nothing a client does can keep the
 * ledger still for longer than this.
 */
export const EXCLUSIVE_WAIT_MS = 10_000;

export interface MemoryLedgerOptions {
  db: Db;
  logger: Logger;
  /** Where the journal lives; none when the database itself is in memory. */
  journalDir?: string;
  /** Hold ids a live job still owns: every other open hold at start was left by a dead process and is released. */
  liveJobHolds?: () => Promise<string[]>;
  sweepIntervalMs?: number;
  /**
   * Told, once the tables hold them, the ids of holds an expiry gave back: by the sweep, or at start (left by a dead
   * process). Some were charged their last checkpoint, which billing announces (publishExpiryCharges).
   */
  onExpired?: (holdIds: string[]) => Promise<void>;
  /** Where the count of dead-lettered records (gateway_ledger_dead_letters_total) and the journal's health go. */
  metrics?: Metrics;
  /** For tests: the journal's disk flush, held back or failed. */
  journalDatasync?: FileJournalOptions['datasync'];
}

/**
 * How long a stop waits for the tables to take the last records. Past it (the database failing) they stay in the
 * journal, which the next start replays, and the process exits rather than hang its SIGTERM.
 */
const STOP_FLUSH_MS = 10_000;
/**
 * How often the sweeper's timer also looks in the tables for open holds memory does not hold (sweepForgotten). Its
 * in-memory expiry runs every sweepIntervalMs and reads no table; this read woke the ledger's PGlite every 5 s on an
 * idle gateway, for holds that are rare (set aside by an admin change, or a job's) and already expire late by design.
 */
const TABLE_SWEEP_MS = 60_000;

interface AccountRow {
  credits: string;
  usage: string;
  held: string;
  suspended: boolean;
  keys: { id: string; limit: string | null; usage: string; held: string }[];
  holds: {
    id: string;
    key: string;
    request: string;
    idem: string | null;
    model: string;
    amount: string;
    created_ms: string;
    expires_ms: string;
    checkpoint: { charge: string; record: HoldClose['record'] } | null;
  }[];
}

const LOAD_ACCOUNT = `
SELECT a.total_credits::text AS credits, a.total_usage::text AS usage, a.held::text AS held, a.suspended,
  (SELECT COALESCE(json_agg(json_build_object('id', k.id, 'limit', k.spend_limit::text, 'usage', k.usage::text, 'held', k.held::text)), '[]')
     FROM api_keys k WHERE k.account_id = a.id) AS keys,
  (SELECT COALESCE(json_agg(json_build_object('id', h.id, 'key', h.key_id, 'request', h.request_id, 'idem', h.idempotency_key,
      'model', h.model, 'amount', h.amount::text, 'created_ms', (extract(epoch FROM h.created_at) * 1000)::bigint::text,
      'expires_ms', (extract(epoch FROM h.expires_at) * 1000)::bigint::text,
      'checkpoint', (SELECT json_build_object('charge', c.charge::text, 'record', c.record) FROM hold_checkpoints c WHERE c.hold_id = h.id))), '[]')
     FROM holds h WHERE h.account_id = a.id AND h.state = 'open') AS holds
FROM accounts a WHERE a.id = $1`;

/**
 * The embedded gateway's ledger: balances, key caps and open holds authoritative in memory in its single process,
 * so a hold costs microseconds instead of a PGlite statement. Each decision is a record, appended to the journal
 * (group commit; a settle is acknowledged only once its record is on disk) and written behind to PGlite
 * (ledger_write), which stays the store that admin, account and generation routes read — after `flushed()`.
 *
 * Anything that changes the ledger's figures outside this object (the admin API) runs under `exclusive`: holds
 * wait, the write-behind drains, the change is made in the tables, and memory forgets what it knew, reloading each
 * account from the tables at its next use. At start, journal records the tables lack are replayed and the holds a
 * dead process left open are released.
 */
export class MemoryLedger implements Ledger {
  private readonly book = new Book();
  private readonly sql: Ledger;
  private seq: number;
  private gate: Promise<void> | undefined;
  private readonly loading = new Map<string, Promise<boolean>>();
  private sweeper: NodeJS.Timeout | undefined;
  private lastTableSweep = 0;

  private constructor(
    private readonly opts: MemoryLedgerOptions,
    private readonly journal: Journal,
    private readonly writes: WriteBehind,
    private readonly deadLetters: DeadLetters,
    startSeq: number,
    /** Released at open, before anyone could hear of it: told at start. */
    private releasedAtOpen: string[],
  ) {
    this.sql = createLedger(opts.db);
    this.seq = startSeq;
    opts.metrics?.gauge(
      'gateway_ledger_journal_healthy',
      'The embedded ledger journal can make decisions durable (1), or has failed (0) and holds and settles are refused until a restart',
      [],
      () => [[{}, journal.healthy ? 1 : 0]],
    );
  }

  /**
   * Replays the journal into the tables (through the write-behind, so a record they cannot take is dead-lettered
   * rather than failing the start), releases what a dead process left open, and starts a fresh journal.
   */
  static async open(opts: MemoryLedgerOptions): Promise<MemoryLedger> {
    const { db, logger } = opts;
    const [{ applied }] = await db.query<{ applied: string }>('SELECT applied_seq::text AS applied FROM ledger_journal');
    const deadLetters = await DeadLetters.open({
      db,
      logger,
      file: opts.journalDir && path.join(opts.journalDir, DEAD_LETTER_FILE),
      metrics: opts.metrics,
    });
    let ledger: MemoryLedger | undefined;
    const writes = new WriteBehind(
      db,
      Number(applied),
      logger,
      deadLetters,
      (upTo, records) => ledger?.applied(upTo, records),
      // Memory counted a decision the tables refused: it reloads from them, so the two agree again.
      () => void ledger?.exclusive(async () => {}).catch((err) => logger.error({ err }, 'reloading the ledger from its tables failed')),
    );
    if (opts.journalDir) {
      const pending = readJournal(opts.journalDir).filter((r) => r.seq > writes.applied);
      for (const r of pending) writes.push(r);
      await writes.flushed();
      if (pending.length > 0) logger.warn({ records: pending.length, upTo: writes.applied }, 'ledger journal replayed into the tables');
    }
    const seq = writes.applied;
    // Memory starts empty: every decision from here is made on what the tables hold.
    await deadLetters.reloaded(seq);
    const keep = (await opts.liveJobHolds?.()) ?? [];
    const released = await db.query<{ id: string }>(
      `SELECT id FROM expire_these(ARRAY(SELECT id FROM holds WHERE state = 'open' AND NOT (id = ANY($1::text[])) ORDER BY expires_at)) AS id`,
      [keep],
    );
    if (released.length > 0) logger.warn({ released: released.length }, 'released the holds a stopped gateway left open');

    const journal = opts.journalDir
      ? await FileJournal.open(opts.journalDir, seq, {
          datasync: opts.journalDatasync,
          onFail: (err) =>
            logger.error(
              { err, applied: writes.applied },
              'the ledger journal failed: holds and settles are refused (503) and readiness fails until the gateway is restarted',
            ),
        })
      : noJournal;
    ledger = new MemoryLedger(
      opts,
      journal,
      writes,
      deadLetters,
      seq,
      released.map((r) => r.id),
    );
    return ledger;
  }

  start(): void {
    this.sweeper = setInterval(() => {
      const tables = Date.now() - this.lastTableSweep >= Math.max(TABLE_SWEEP_MS, this.opts.sweepIntervalMs ?? 0);
      void this.sweep({ tables });
    }, this.opts.sweepIntervalMs ?? 5_000);
    this.sweeper.unref();
    const released = this.releasedAtOpen;
    this.releasedAtOpen = [];
    void this.expired(released);
  }

  private async expired(holdIds: string[]): Promise<void> {
    const told = this.opts.onExpired;
    if (holdIds.length === 0 || !told) return;
    // The announcement reads the tables: they must hold the sweep's charges first.
    await this.writes
      .flushed()
      .then(() => told(holdIds))
      .catch((err) => this.opts.logger.error({ err, holds: holdIds.length }, 'announcing expired holds failed'));
  }

  async stop(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    let timer: NodeJS.Timeout | undefined;
    const flushed = await Promise.race([
      this.writes.flushed().then(() => true),
      new Promise<false>((r) => {
        timer = setTimeout(() => r(false), STOP_FLUSH_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!flushed)
      this.opts.logger.error(
        { applied: this.writes.applied, last: this.seq },
        'stopping with ledger records the tables have not taken; the journal keeps them for the next start',
      );
    this.writes.close();
    await this.journal.close();
  }

  /** Rejects once the journal has failed: the ledger refuses holds and settles, so the process should take no traffic. */
  ready(): void {
    if (!this.journal.healthy) throw new Error('the ledger journal failed: holds and settles cannot be made durable until a restart');
  }

  /**
   * A decision made now could never be made durable: refused before it is made (memory stays as the tables and the
   * journal know it), retryable, so a client tries again and the bus redelivers a close, to a restarted process.
   */
  private refuseWithoutJournal(): void {
    if (!this.journal.healthy)
      throw new GatewayError('upstream_unavailable', 'The ledger cannot record payments right now; try again shortly', {
        headers: { 'retry-after': '5' },
      });
  }

  /** Resolves once the tables hold every decision made before the call: read after it. */
  flushed(): Promise<void> {
    return this.writes.flushed();
  }

  /** `flushed()`, refused with a retryable 503 when the tables have not caught up within `waitMs`. */
  flushedWithin(waitMs = EXCLUSIVE_WAIT_MS): Promise<void> {
    return within(this.writes.flushed(), Date.now() + waitMs);
  }

  /**
   * Runs `change` on the tables with the ledger still: holds and closes wait, the write-behind drains first, and
   * memory reloads every account from the tables afterwards, so the change is seen exactly. The wait for the gate
   * and the drain is bounded by `waitMs`; `change` itself must be work on the tables only (never wait on a client:
   * the admin API reads and authenticates the whole request before it asks for the gate).
   */
  async exclusive<T>(change: () => Promise<T>, waitMs = EXCLUSIVE_WAIT_MS): Promise<T> {
    const deadline = Date.now() + waitMs;
    while (this.gate) await within(this.gate, deadline);
    let open!: () => void;
    this.gate = new Promise<void>((r) => {
      open = r;
    });
    try {
      await within(Promise.all([...this.loading.values(), this.writes.flushed()]), deadline);
      // Memory reloads below: the holds of records dead-lettered so far are decided from the tables from now on.
      await this.deadLetters.reloaded(this.writes.applied);
      return await change();
    } finally {
      this.book.clear();
      this.gate = undefined;
      open();
    }
  }

  async placeHold(req: HoldRequest): Promise<Hold> {
    let keyLookedUp = false;
    for (;;) {
      if (this.gate) {
        await this.gate;
        continue;
      }
      const account = this.book.accounts.get(req.accountId);
      if (!account) {
        if (!(await this.load(req.accountId))) return holdFromRow({ outcome: 'insufficient', balance: 0n, held: 0n }, req);
        continue;
      }
      if (!account.keys.has(req.keyId) && !keyLookedUp) {
        // A key the tables got after the account was loaded: forget and reload. Unknown there too, it is refused below.
        keyLookedUp = true;
        if (await this.keyExists(req.keyId, account.id)) await this.exclusive(async () => {});
        continue;
      }
      // From here to the return nothing awaits: no other hold or close can run between the checks and the writes.
      this.refuseWithoutJournal();
      const decided = this.book.place(account, req, newHoldId(), Date.now());
      if (decided.hold) this.record({ t: 'place', h: decided.hold.facts, idem: decided.hold.idem, expires_ms: decided.hold.expiresAt }, decided.hold);
      return holdFromRow(decided, req);
    }
  }

  async closeHold(ev: HoldClose): Promise<{ result: CloseResult; charged: bigint }> {
    for (;;) {
      if (this.gate) {
        await this.gate;
        continue;
      }
      const h = this.book.holds.get(ev.hold_id);
      const account = h && this.book.accounts.get(h.facts.account);
      // Not in memory: closed and written out already (a redelivery), or left by an earlier process, or unknown.
      // The SQL rules answer all three, on the tables, with memory out of the way.
      if (!h || !account) {
        const closed = await this.exclusive(() => this.sql.closeHold(ev));
        // Its request id is finished now, which memory must know to refuse a retry as place_hold would.
        if (closed.result !== 'unknown') this.book.markFinished(ev.account_id, ev.request_id);
        return closed;
      }
      this.refuseWithoutJournal();
      const { result, charged, late } = this.book.close(h, account, ev);
      // A redelivery of a close still waiting for its sync: acknowledged only once the first close's record is on
      // disk, or an acknowledgement could outrun it and a power cut lose the settle with no event left to redo it.
      if (result === 'noop') {
        await this.journal.durable(h.lastSeq);
        return { result, charged };
      }
      const seq = this.record(
        { t: 'close', h: h.facts, state: h.state as 'settled' | 'released' | 'expired', charge: charged.toString(), late, rec: ev.record },
        h,
      );
      // Acknowledged (and so never redelivered) only once it would survive a power cut.
      await this.journal.durable(seq);
      return { result, charged };
    }
  }

  async checkpointHold(ev: HoldCheckpoint): Promise<boolean> {
    for (;;) {
      if (this.gate) {
        await this.gate;
        continue;
      }
      const h = this.book.holds.get(ev.hold_id);
      if (!h) {
        // Its account not loaded since an admin change: load it, and the hold comes back with its checkpoint. Written
        // to the tables instead, beside a load reading them, the checkpoint could miss memory, which then charged a
        // lower one at expiry, or none (found by the ledger properties). A loaded account has all its open holds in
        // memory: a hold missing from it has closed and been written out, or never existed, and keeps no checkpoint.
        if (this.book.accounts.has(ev.account_id)) return false;
        if (!(await this.load(ev.account_id))) return false;
        continue;
      }
      this.refuseWithoutJournal();
      if (!this.book.checkpoint(h, ev)) return false;
      // Not waited for: a checkpoint lost to a kill is only an earlier, smaller charge than the one before it.
      this.record({ t: 'checkpoint', h: h.facts, charge: ev.charge_nano, rec: ev.record }, h);
      return true;
    }
  }

  private record(r: UnnumberedRecord, h: MemHold): number {
    const seq = ++this.seq;
    const rec = { ...r, seq } as LedgerRecord;
    h.lastSeq = seq;
    this.journal.append(rec);
    this.writes.push(rec);
    return seq;
  }

  private applied(upTo: number, records: LedgerRecord[]): void {
    this.journal.retire(upTo);
    for (const r of records) {
      if (r.t === 'place') continue;
      const h = this.book.holds.get(r.h.id);
      if (h) this.book.forgetIfDone(h, upTo);
    }
  }

  /**
   * The sweeper's one round (its timer runs it every sweepIntervalMs once started, with the tables' part only every
   * TABLE_SWEEP_MS).
   */
  async sweep(opts: { tables?: boolean } = {}): Promise<void> {
    while (this.gate) await this.gate;
    // Expiries could not be recorded; the holds stay open in memory, and the restart the failure asks for releases them.
    if (!this.journal.healthy) return;
    const now = Date.now();
    const due = this.book.expireDue(now);
    for (const h of due) this.record({ t: 'expire', h: h.facts }, h);
    if (due.length > 0) this.opts.logger.warn({ released: due.length }, 'released expired holds');
    // As expire_these does: every due hold given back first, then a stream that stopped being closed is charged its
    // last checkpoint, as a late settle.
    for (const h of due) {
      const account = this.book.accounts.get(h.facts.account);
      if (!h.checkpoint || !account) continue;
      const { result, charged, late } = this.book.close(h, account, h.checkpoint);
      this.record({ t: 'close', h: h.facts, state: 'expired', charge: charged.toString(), late, rec: h.checkpoint.record }, h);
      this.opts.logger.warn(
        { holdId: h.facts.id, requestId: h.facts.request, result, charged: charged.toString() },
        'expired hold charged its last checkpoint',
      );
    }
    this.book.forgetFinishedBefore(now - FINISHED_RETENTION_MS);
    if (opts.tables ?? true) {
      this.lastTableSweep = now;
      await this.sweepForgotten().catch((err) => this.opts.logger.error({ err }, 'hold sweep failed'));
    }
    await this.expired(due.filter((h) => h.checkpoint).map((h) => h.facts.id));
  }

  /**
   * Open holds memory does not hold (their account not used since an admin change made it forget them, or left by a
   * job that ended while the account was idle) are found in the tables past their expiry and expired there, with
   * the ledger still. Holds memory knows in any state are left to it.
   */
  private async sweepForgotten(): Promise<void> {
    const known = [...this.book.holds.keys()];
    const [{ n }] = await this.opts.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM holds WHERE state = 'open' AND expires_at < now() AND NOT (id = ANY($1::text[]))`,
      [known],
    );
    if (n === 0) return;
    const released = await this.exclusive(() =>
      this.opts.db.query<{ id: string; account_id: string; request_id: string }>(
        `SELECT h.id, h.account_id, h.request_id FROM expire_these(ARRAY(SELECT id FROM holds WHERE state = 'open' AND expires_at < now() ORDER BY expires_at)) AS e
           JOIN holds h ON h.id = e`,
      ),
    );
    for (const h of released) this.book.markFinished(h.account_id, h.request_id);
    this.opts.logger.warn({ released: released.length }, 'released expired holds memory had set aside');
    await this.expired(released.map((h) => h.id));
  }

  /** Loads an account (its keys and open holds) from the tables; false when it does not exist. */
  private load(accountId: string): Promise<boolean> {
    let pending = this.loading.get(accountId);
    if (!pending) {
      pending = this.opts.db
        .query<AccountRow & Record<string, unknown>>(LOAD_ACCOUNT, [accountId])
        .then(([row]) => {
          // A gate opened while this read ran: its change may be missing here, so the next use reads again.
          if (row && !this.gate)
            this.book.adopt(
              accountFromRow(accountId, row),
              row.holds.map((h) => holdFromRowJson(accountId, h)),
            );
          return row !== undefined;
        })
        .finally(() => this.loading.delete(accountId));
      this.loading.set(accountId, pending);
    }
    return pending;
  }

  private async keyExists(keyId: string, accountId: string): Promise<boolean> {
    return (await this.opts.db.query('SELECT 1 FROM api_keys WHERE id = $1 AND account_id = $2', [keyId, accountId])).length > 0;
  }
}

function accountFromRow(id: string, row: AccountRow): AccountState {
  return {
    id,
    credits: BigInt(row.credits),
    usage: BigInt(row.usage),
    held: BigInt(row.held),
    suspended: row.suspended,
    keys: new Map(row.keys.map((k) => [k.id, { limit: k.limit === null ? null : BigInt(k.limit), usage: BigInt(k.usage), held: BigInt(k.held) }])),
  };
}

function holdFromRowJson(account: string, h: AccountRow['holds'][number]): MemHold {
  return {
    facts: { id: h.id, account, key: h.key, request: h.request, model: h.model, amount: h.amount, created_ms: Number(h.created_ms) },
    amount: BigInt(h.amount),
    idem: h.idem,
    expiresAt: Number(h.expires_ms),
    state: 'open',
    closed: false,
    charge: 0n,
    lastSeq: 0,
    checkpoint: h.checkpoint
      ? {
          hold_id: h.id,
          account_id: account,
          key_id: h.key,
          request_id: h.request,
          outcome: 'settle',
          charge_nano: h.checkpoint.charge,
          record: h.checkpoint.record,
        }
      : undefined,
  };
}

/** `work`, or a retryable 503 once `deadline` passes first; the work itself goes on, unwatched. */
function within<T>(work: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(new GatewayError('upstream_unavailable', 'The ledger is busy catching up; try again shortly', { headers: { 'retry-after': '1' } })),
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

export const journalDirOf = (dataDir: string) => path.join(dataDir, 'ledger-journal');
/** In the journal's directory: dead letters their table refused (docs/operations.md). */
const DEAD_LETTER_FILE = 'dead-letters.jsonl';
export const deadLetterFileOf = (dataDir: string) => path.join(journalDirOf(dataDir), DEAD_LETTER_FILE);
