import type { Batch, CloseSeen, LateCloses } from '../batch';
import { got, max, min } from '../model';

/** The checkpoints the batch offered that answered, per hold. */
export function offeredCheckpoints(b: Batch): Map<string, bigint[]> {
  const offersOf = new Map<string, bigint[]>();
  for (const [i, op] of b.ops.entries()) {
    if (op.kind !== 'checkpoint' || !b.outcomes[i].ok) continue;
    offersOf.set(op.hold.id, [...(offersOf.get(op.hold.id) ?? []), op.charge]);
  }
  return offersOf;
}

/**
 * 3b. Checkpoints at expiry: a hold that expires with a checkpoint is charged it (capped at the hold) as its late
 * settle, if that still fits; without one it stays unclosed for a late close, as before. A checkpoint offered in
 * the same batch may or may not have been seen by the sweep; the one kept before the batch must be.
 * Returns the holds closed at their expiry; adds their charges and drops to `late`.
 */
export function checkCheckpointsAtExpiry(
  b: Batch,
  seen: { expiredNow: Set<string>; sweepAborted: boolean; closesOf: Map<string, CloseSeen[]>; offersOf: Map<string, bigint[]> },
  late: LateCloses,
): Set<string> {
  const { expiredNow, sweepAborted, closesOf, offersOf } = seen;
  const chargedAtExpiry = new Set<string>();
  for (const id of expiredNow) {
    const x = got(b.model.byId, id);
    const row = got(b.after.holds, id);
    const cp = x.checkpoint;
    const candidates = [...(cp === null ? [] : [cp]), ...(offersOf.get(id) ?? []).filter((c) => cp === null || c >= cp)];
    const lateClosedByCall = (closesOf.get(id) ?? []).some((c) => c.result === 'late_charged' || c.result === 'late_dropped');
    if (!row.closed || lateClosedByCall) {
      if (cp !== null && !sweepAborted) b.fail(`hold ${id} expired with checkpoint ${cp} and was not charged it`);
      continue;
    }
    if (candidates.length === 0) b.fail(`hold ${id} was closed at its expiry with no checkpoint to charge`);
    const capped = candidates.map((c) => min(c, x.amount));
    // A checkpoint of 0 (nothing delivered yet) is charged as 0: a charge of 0 is that checkpoint's, not a drop,
    // when one of 0 is among those the sweep may have seen. (On PostgreSQL a higher one offered beside the sweep
    // can answer kept and still not be charged: the sweep read the one before it. checkpoint_hold.sql says why.)
    if (row.charge > 0n || capped.includes(0n)) {
      if (!capped.includes(row.charge)) b.fail(`hold ${id} was charged ${row.charge} at expiry, its checkpoints were ${candidates.join(', ')}`);
      late.charges.push({ hold: x, charged: row.charge });
      b.tally.count('seen:checkpoint charged at expiry');
    } else {
      const wanted = capped.reduce(max);
      if (wanted > 0n) late.dropped.push({ hold: x, wanted });
      b.tally.count('seen:checkpoint dropped at expiry');
    }
    chargedAtExpiry.add(id);
    x.lateClosed = true;
    x.lateOutcome = null;
    x.charge = row.charge;
  }
  return chargedAtExpiry;
}
