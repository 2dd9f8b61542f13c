import type { CloseResult } from '../../../ledger/holds';
import type { Batch, CloseSeen, LateCloses } from '../batch';
import { got, min } from '../model';

/**
 * The batch's closes that answered, per hold; a close of a hold never placed must answer unknown, 0.
 */
export function collectCloses(b: Batch): Map<string, CloseSeen[]> {
  const closesOf = new Map<string, CloseSeen[]>();
  for (const [i, op] of b.ops.entries()) {
    const o = b.outcomes[i];
    if (op.kind === 'ghost') {
      const r = o.ok ? (o.value as { result: CloseResult; charged: bigint }) : undefined;
      if (r?.result !== 'unknown' || r.charged !== 0n) b.fail('closing a hold that was never placed did not answer unknown, 0');
    }
    if (op.kind !== 'close' || !o.ok) continue;
    const r = o.value as { result: CloseResult; charged: bigint };
    const list = closesOf.get(op.hold.id) ?? [];
    list.push({ op, result: r.result, charged: r.charged, i });
    closesOf.set(op.hold.id, list);
  }
  return closesOf;
}

/**
 * 4. Closes: a hold leaves open once; each further close is a no-op answering what was charged. Moves each closed
 * hold in the model, and adds the late closes' charges and drops to `late`.
 */
export function checkCloses(
  b: Batch,
  seen: { closesOf: Map<string, CloseSeen[]>; expiredNow: Set<string>; chargedAtExpiry: Set<string> },
  late: LateCloses,
): void {
  const { closesOf, expiredNow, chargedAtExpiry } = seen;
  for (const [holdId, list] of closesOf) {
    const x = got(b.model.byId, holdId);
    const was = got(b.stateBefore, holdId);
    const row = got(b.after.holds, holdId);
    const firsts = list.filter((c) => c.result !== 'noop');
    if (list.length > 1) b.tally.count('seen:one hold closed concurrently');
    if (firsts.length > 1) b.fail(`hold ${holdId} was closed ${firsts.length} times`, { results: firsts.map((c) => c.result) });
    const closedBefore = was.state === 'settled' || was.state === 'released' || (was.state === 'expired' && was.lateClosed);
    const expiredUnclosed = (was.state === 'expired' && !was.lateClosed) || expiredNow.has(holdId);
    for (const c of list) {
      const capped = c.op.outcome === 'settle' ? min(c.op.charge, x.amount) : 0n;
      if (c.result !== 'noop' && c.op.charge > x.amount) b.tally.count('seen:settle above the hold');
      switch (c.result) {
        case 'settled':
        case 'released':
          if (was.state !== 'open' || expiredNow.has(holdId)) b.fail(`hold ${holdId} answered ${c.result} but was not open`);
          if (c.result !== (c.op.outcome === 'settle' ? 'settled' : 'released')) b.fail(`a ${c.op.outcome} of ${holdId} answered ${c.result}`);
          // A settle above the hold is capped at the hold (MONEY.md: never silently charged beyond the worst case).
          if (c.charged !== capped) b.fail(`hold ${holdId} (${x.amount}) charged ${c.charged} for a ${c.op.outcome} of ${c.op.charge}`);
          x.state = c.result;
          x.charge = c.charged;
          break;
        case 'late_charged':
        case 'late_dropped':
          if (!expiredUnclosed) b.fail(`hold ${holdId} answered ${c.result} but had not expired unclosed`);
          if (c.result === 'late_charged' && (c.op.outcome !== 'settle' || c.charged !== capped || capped === 0n))
            b.fail(`late charge of ${holdId}: charged ${c.charged} for a ${c.op.outcome} of ${c.op.charge}`);
          if (c.result === 'late_dropped' && c.charged !== 0n) b.fail(`late_dropped of ${holdId} charged ${c.charged}`);
          if (c.result === 'late_charged') late.charges.push({ hold: x, charged: c.charged });
          else if (capped > 0n) late.dropped.push({ hold: x, wanted: capped });
          x.lateClosed = true;
          x.lateOutcome = c.op.outcome;
          x.charge = c.charged;
          break;
        case 'noop':
          if (!closedBefore && firsts.length === 0 && !chargedAtExpiry.has(holdId)) b.fail(`hold ${holdId} answered noop to its first close`);
          if (c.charged !== row.charge) b.fail(`a repeated close of ${holdId} answered ${c.charged}, the hold was charged ${row.charge}`);
          break;
        default:
          b.fail(`closing known hold ${holdId} answered ${c.result}`);
      }
    }
  }
}
