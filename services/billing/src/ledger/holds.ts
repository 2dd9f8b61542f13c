import type { Db } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { formatUsd } from '@gateway/money';
import type { Hold, HoldRequest } from '@gateway/billing-client';
import type { HoldCheckpoint, HoldClose } from '@gateway/events';
import { newHoldId } from './ids';
import { batched, batchedBy } from './batcher';

interface PlaceRow {
  outcome: PlaceOutcome['outcome'];
  hold_id: string | null;
  amount: string | bigint;
  expires_at: string | Date | null;
  balance: string | bigint | null;
  held: string | bigint | null;
  key_room: string | bigint | null;
}

/** place_hold's answer, from the SQL or from the embedded in-memory ledger (which leaves out what its outcome does not need). */
export interface PlaceOutcome {
  outcome: 'placed' | 'existing' | 'finished' | 'duplicate' | 'insufficient' | 'suspended' | 'key_limit';
  hold_id?: string | null;
  amount?: string | bigint;
  expires_at?: string | Date | null;
  balance?: string | bigint | null;
  held?: string | bigint | null;
  key_room?: string | bigint | null;
}

const iso = (v: string | Date | null | undefined) => (v instanceof Date ? v.toISOString() : v ? new Date(v).toISOString() : '');

const PLACE_ONE = 'SELECT * FROM place_hold($1, $2, $3, $4, $5, $6, $7, $8)';
// A batch is answered as its calls would be in order, each key's and account's row written once (place_holds.sql).
const PLACE_MANY = 'SELECT * FROM place_holds($1::jsonb)';
const CLOSE_ONE = 'SELECT * FROM close_hold($1, $2, $3, $4)';
// The same for closes. The function locks the batch's holds first, in id order, then the key, then the account, as
// the sweeper does (close_holds.sql): a batch that held the key and the account while reaching for its next hold
// could deadlock with the sweeper, which takes holds first (the property tests on PostgreSQL found that once).
const CLOSE_MANY = 'SELECT * FROM close_holds($1::jsonb)';

type PlaceArgs = [string, string, string, string, string | null, string, string, number];
type CloseArgs = [string, string, string, string];
/** A close and the hold's key, which batches it on PostgreSQL (see batchedBy). */
type CloseCall = { args: CloseArgs; keyId?: string };

/**
 * The ledger's two writes, concurrent calls grouped into one statement (see batcher.ts). On PGlite, one
 * connection, all of them. On PostgreSQL, those of one key: every place and close of a key locks the key's row and
 * its account's, so one call at a time per key would serialise a busy key on those locks, a commit each (700 calls a
 * second here); a batch takes them once. Batches of different keys run side by side on the pool, and each takes
 * its key's row before its account's, as every single call does; a close batch locks all its holds first.
 */
export interface Ledger {
  placeHold(req: HoldRequest): Promise<Hold>;
  closeHold(ev: HoldClose): Promise<{ result: CloseResult; charged: bigint }>;
  /** Keeps a streaming hold's checkpoint, the highest one, while it is open; false when it was not kept. */
  checkpointHold(ev: HoldCheckpoint): Promise<boolean>;
}

export function createLedger(db: Db): Ledger {
  const placeOne = async (a: PlaceArgs) => (await db.query<PlaceRow & Record<string, unknown>>(PLACE_ONE, a))[0];
  const closeOne = async (a: CloseArgs) => (await db.query<CloseRow & Record<string, unknown>>(CLOSE_ONE, a))[0];
  const placeMany = async (all: PlaceArgs[]) => {
    const json = all.map(([id, account, key, request, idem, model, amount, ttl], i) => ({
      i,
      id,
      account,
      key,
      request,
      idem,
      model,
      amount,
      ttl,
    }));
    return byIndex(await db.query<PlaceRow & { i: number } & Record<string, unknown>>(PLACE_MANY, [JSON.stringify(json)]), all.length);
  };
  const closeMany = async (all: CloseCall[]) => {
    const json = all.map(({ args: [hold, outcome, charge, rec] }, i) => ({ i, hold, outcome, charge, rec: JSON.parse(rec) }));
    return byIndex(await db.query<CloseRow & { i: number } & Record<string, unknown>>(CLOSE_MANY, [JSON.stringify(json)]), all.length);
  };
  const closeAlone = (c: CloseCall) => closeOne(c.args);
  const place =
    db.kind === 'pglite' ? batched<PlaceArgs, PlaceRow>(placeMany, placeOne) : batchedBy<PlaceArgs, PlaceRow>((a) => a[2], placeMany, placeOne);
  const close =
    db.kind === 'pglite'
      ? batched<CloseCall, CloseRow>(closeMany, closeAlone)
      : batchedBy<CloseCall, CloseRow>((c) => c.keyId, closeMany, closeAlone);

  return {
    async placeHold(req) {
      let row: PlaceRow;
      try {
        row = await place([
          newHoldId(),
          req.accountId,
          req.keyId,
          req.requestId,
          req.idempotencyKey ?? null,
          req.model,
          req.amountNano.toString(),
          req.ttlMs,
        ]);
      } catch (e) {
        // Two requests racing with one Idempotency-Key: the unique index lets exactly one in.
        if (
          (e as { code?: string }).code === '23505' &&
          /idempotency/.test(String((e as { constraint?: string }).constraint ?? (e as Error).message))
        ) {
          throw duplicate();
        }
        throw e;
      }
      return holdFromRow(row, req);
    },
    async closeHold(ev) {
      const row = await close({ args: [ev.hold_id, ev.outcome, ev.charge_nano, JSON.stringify(ev.record)], keyId: ev.key_id });
      return { result: row.result, charged: BigInt(row.charged) };
    },
    async checkpointHold(ev) {
      // One per stream every few seconds: no batching worth its complexity.
      const [row] = await db.query<{ kept: boolean }>('SELECT checkpoint_hold($1, $2, $3) AS kept', [
        ev.hold_id,
        ev.charge_nano,
        JSON.stringify(ev.record),
      ]);
      return row.kept;
    },
  };
}

/**
 * Answers of a batch, put back in call order by their index. Every call must have exactly one answer: anything
 * else fails the batch, and the batcher then runs each call alone, rather than hand a caller someone else's row.
 */
function byIndex<T extends { i: number }>(rows: T[], n: number): T[] {
  const out: T[] = new Array(n);
  for (const r of rows) {
    if (out[r.i] !== undefined) throw new Error(`ledger batch: two answers for call ${r.i}`);
    out[r.i] = r;
  }
  if (rows.length !== n || out.some((r) => r === undefined)) throw new Error('ledger batch: an answer is missing');
  return out;
}

interface CloseRow {
  result: CloseResult;
  charged: string | bigint;
}

/** Turns place_hold's outcome into a hold or the spec's refusal. */
export function holdFromRow(row: PlaceOutcome, req: HoldRequest): Hold {
  switch (row.outcome) {
    case 'placed':
    case 'existing':
      // place_hold returns the id with both outcomes; without one the SQL and this code disagree, not the client.
      if (row.hold_id == null || row.amount === undefined) throw new Error(`ledger: place_hold answered "${row.outcome}" without a hold id`);
      return { holdId: row.hold_id, amountNano: BigInt(row.amount), expiresAt: iso(row.expires_at) };
    case 'duplicate':
      throw duplicate();
    case 'finished':
      throw new GatewayError('duplicate_request', `Request ${req.requestId} has already finished; send a new request`);
    case 'suspended':
      throw new GatewayError('insufficient_credits', 'This account is suspended; contact the operator to reinstate it');
    case 'key_limit':
      throw new GatewayError(
        'insufficient_credits',
        `This key's spend limit cannot cover the request: ${formatUsd(BigInt(row.key_room ?? 0))} USD left on the key, ${formatUsd(req.amountNano)} USD needed`,
      );
    case 'insufficient': {
      const balance = BigInt(row.balance ?? 0);
      const held = BigInt(row.held ?? 0);
      throw new GatewayError(
        'insufficient_credits',
        `Insufficient credits: balance ${formatUsd(balance)} USD, held by requests in flight ${formatUsd(held)} USD, ` +
          `available ${formatUsd(balance - held)} USD; this request needs ${formatUsd(req.amountNano)} USD reserved`,
      );
    }
  }
}

function duplicate() {
  return new GatewayError('duplicate_request', 'Another request with this Idempotency-Key is still running; wait for it, then retry');
}

export type CloseResult = 'settled' | 'released' | 'noop' | 'unknown' | 'late_charged' | 'late_dropped';

/** One sweep (sweep_holds): the ids of the holds it expired, charged their checkpoint or not. */
export async function sweepHolds(db: Db, limit = 500): Promise<string[]> {
  return (await db.query<{ id: string }>('SELECT sweep_holds($1) AS id', [limit])).map((r) => r.id);
}

export async function expireHolds(db: Db, limit = 500): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT expire_holds($1) AS n', [limit]);
  return Number(row.n);
}
