import type { Db } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { formatUsd } from '@gateway/money';
import type { Hold, HoldRequest } from '@gateway/billing-client';
import type { HoldClose } from '@gateway/events';
import { newHoldId } from './ids';

interface PlaceRow {
  outcome: 'placed' | 'existing' | 'duplicate' | 'insufficient' | 'suspended' | 'key_limit';
  hold_id: string | null;
  amount: string | bigint;
  expires_at: string | Date | null;
  balance: string | bigint | null;
  held: string | bigint | null;
  key_room: string | bigint | null;
}

const iso = (v: string | Date | null) => (v instanceof Date ? v.toISOString() : v ? new Date(v).toISOString() : '');

/** Places a hold in one round trip (see `place_hold` in the migrations) and turns refusals into the spec's errors. */
export async function placeHold(db: Db, req: HoldRequest): Promise<Hold> {
  let row: PlaceRow;
  try {
    [row] = await db.query<PlaceRow & Record<string, unknown>>('SELECT * FROM place_hold($1, $2, $3, $4, $5, $6, $7, $8)', [
      newHoldId(), req.accountId, req.keyId, req.requestId, req.idempotencyKey ?? null, req.model, req.amountNano.toString(), req.ttlMs,
    ]);
  } catch (e) {
    // Two requests racing with one Idempotency-Key: the unique index lets exactly one in.
    if ((e as { code?: string }).code === '23505' && /idempotency/.test(String((e as { constraint?: string }).constraint ?? (e as Error).message))) {
      throw duplicate();
    }
    throw e;
  }
  switch (row.outcome) {
    case 'placed':
    case 'existing':
      return { holdId: row.hold_id!, amountNano: BigInt(row.amount), expiresAt: iso(row.expires_at) };
    case 'duplicate':
      throw duplicate();
    case 'suspended':
      throw new GatewayError('insufficient_credits', 'This account is suspended; contact the operator to reinstate it');
    case 'key_limit':
      throw new GatewayError(
        'insufficient_credits',
        `This key's spend limit cannot cover the request: ${formatUsd(BigInt(row.key_room ?? 0))} USD left on the key, ${formatUsd(BigInt(row.amount))} USD needed`,
      );
    case 'insufficient': {
      const balance = BigInt(row.balance ?? 0);
      const held = BigInt(row.held ?? 0);
      throw new GatewayError(
        'insufficient_credits',
        `Insufficient credits: balance ${formatUsd(balance)} USD, held by requests in flight ${formatUsd(held)} USD, ` +
          `available ${formatUsd(balance - held)} USD; this request needs ${formatUsd(BigInt(row.amount))} USD reserved`,
      );
    }
  }
}

function duplicate() {
  return new GatewayError('duplicate_request', 'Another request with this Idempotency-Key is still running; wait for it, then retry');
}

export type CloseResult = 'settled' | 'released' | 'noop' | 'unknown' | 'late_charged' | 'late_dropped';

/** Applies a settle or release event; idempotent on the hold id. */
export async function closeHold(db: Db, ev: HoldClose): Promise<{ result: CloseResult; charged: bigint }> {
  const [row] = await db.query<{ result: CloseResult; charged: string | bigint }>('SELECT * FROM close_hold($1, $2, $3, $4)', [
    ev.hold_id, ev.outcome, ev.charge_nano, JSON.stringify(ev.record),
  ]);
  return { result: row.result, charged: BigInt(row.charged) };
}

export async function expireHolds(db: Db, limit = 500): Promise<number> {
  const [row] = await db.query<{ n: number }>('SELECT expire_holds($1) AS n', [limit]);
  return Number(row.n);
}
