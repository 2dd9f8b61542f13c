import type { GatewayError } from '@gateway/errors';
import type { Hold } from '@gateway/billing-client';
import type { Batch, CloseSeen, LateCloses } from '../batch';
import { type Bound, type CapOp, got, gt, INF, le, max, min, type Placed } from '../model';

interface Seen {
  aborted: Set<number>;
  placedNow: Placed[];
  expiredNow: Set<string>;
  closesOf: Map<string, CloseSeen[]>;
}

/** 6. Money: every refusal had a reason in some order of the batch, and every acceptance fitted in some order. */
export function checkMoneyBounds(b: Batch, seen: Seen, late: LateCloses): void {
  const { ops, outcomes, model, stateBefore, after } = b;
  const { aborted, placedNow } = seen;
  const flows = roomBounds(b, seen, late);
  const acctOf = (id: string) => got(flows.accounts, id);
  const keyOf = (id: string) => got(flows.keys, id);
  for (const [i, op] of ops.entries()) {
    const o = outcomes[i];
    if (aborted.has(i)) continue;
    if (op.kind === 'place') {
      const a = acctOf(op.account);
      const k = keyOf(op.key);
      if (o.ok) {
        if (!le(op.amount, k.roomHi)) b.fail(`hold of ${op.amount} placed beyond key ${op.key}'s cap (room at most ${k.roomHi})`);
        if (!le(op.amount, a.availHi)) b.fail(`hold of ${op.amount} placed beyond account ${op.account}'s available (at most ${a.availHi})`);
        if (op.idem !== null) {
          const blocker = model.holds.find(
            (x) =>
              x.id !== (o.value as Hold).holdId &&
              x.account === op.account &&
              x.idem === op.idem &&
              stateBefore.get(x.id)?.state === 'open' &&
              got(after.holds, x.id).state === 'open',
          );
          if (blocker) b.fail(`a hold with Idempotency-Key ${op.idem} was placed while ${blocker.id} held that key open`);
        }
        continue;
      }
      const e = o.error as GatewayError;
      if (e.code === 'duplicate_request') {
        const other = model.holds.some(
          (x) =>
            x.account === op.account &&
            x.idem === op.idem &&
            (stateBefore.get(x.id)?.state === 'open' || placedNow.some((p) => p.hold.holdId === x.id)),
        );
        if (!other) b.fail(`refused as a duplicate Idempotency-Key ${op.idem} with no open hold carrying it`);
      } else if (/spend limit/.test(e.message)) {
        if (!op.foreign && !gt(op.amount, k.roomLo)) b.fail(`hold of ${op.amount} refused by key ${op.key}'s cap with room ${k.roomLo}`);
      } else if (/Insufficient credits/.test(e.message)) {
        if (op.foreign) b.fail(`a hold on another account's key was refused for credits, not for the key`);
        if (!gt(op.amount, a.availLo)) b.fail(`hold of ${op.amount} refused with at least ${a.availLo} available`);
      } else {
        b.fail(`hold refused for an unexpected reason: ${e.message}`);
      }
    } else if (op.kind === 'credit' && op.amount < 0n) {
      const a = acctOf(op.account);
      const y = -op.amount;
      if (o.ok && !le(y, a.availHi)) b.fail(`a correction of ${y} was taken with at most ${a.availHi} available`);
      if (!o.ok && !gt(y, a.availLo)) b.fail(`a correction of ${y} was refused with at least ${a.availLo} available`);
    }
  }
  for (const l of late.charges) {
    if (!le(l.charged, keyOf(l.hold.key).roomHi)) b.fail(`late charge ${l.charged} of ${l.hold.id} taken beyond its key's cap`);
    if (!le(l.charged, acctOf(l.hold.account).availHi)) b.fail(`late charge ${l.charged} of ${l.hold.id} taken beyond the account's available`);
  }
  for (const l of late.dropped) {
    const k = keyOf(l.hold.key);
    const a = acctOf(l.hold.account);
    if (!gt(l.wanted, k.roomLo) && !gt(l.wanted, a.availLo))
      b.fail(`late charge ${l.wanted} of ${l.hold.id} dropped though key room ≥ ${k.roomLo} and available ≥ ${a.availLo}`);
  }
}

/** Per account and key, the least and the most room any order of the batch could have shown a command. */
function roomBounds(b: Batch, seen: Seen, late: LateCloses) {
  const { ops, outcomes, model } = b;
  const took = new Map<string, bigint>(); // account or key id: what others of the batch took (holds, late charges, corrections)
  const freed = new Map<string, bigint>(); // what the batch gave back (releases, settles below the hold, expiries, top-ups)
  const add = (m: Map<string, bigint>, id: string, v: bigint) => m.set(id, (m.get(id) ?? 0n) + v);
  for (const p of seen.placedNow) {
    add(took, p.op.account, p.op.amount);
    add(took, p.op.key, p.op.amount);
  }
  for (const l of late.charges) {
    add(took, l.hold.account, l.charged);
    add(took, l.hold.key, l.charged);
  }
  for (const id of seen.expiredNow) {
    const x = got(model.byId, id);
    add(freed, x.account, x.amount);
    add(freed, x.key, x.amount);
  }
  for (const [id, list] of seen.closesOf) {
    const x = got(model.byId, id);
    for (const c of list) {
      if (c.result !== 'settled' && c.result !== 'released') continue;
      add(freed, x.account, x.amount - c.charged);
      add(freed, x.key, x.amount - c.charged);
    }
  }
  for (const [i, op] of ops.entries()) {
    if (op.kind !== 'credit' || !outcomes[i].ok) continue;
    if (op.amount >= 0n) add(freed, op.account, op.amount);
    else add(took, op.account, -op.amount);
  }
  const accounts = new Map<string, { availLo: Bound; availHi: Bound }>();
  for (const [id, a] of b.before.accounts) {
    const avail = a.credits - a.usage - a.held;
    accounts.set(id, { availLo: avail - (took.get(id) ?? 0n), availHi: avail + (freed.get(id) ?? 0n) });
  }
  const keys = new Map<string, { roomLo: Bound; roomHi: Bound }>();
  for (const [id, k] of b.before.keys) {
    const caps = [k.cap, ...ops.filter((o): o is CapOp => o.kind === 'cap' && o.key === id).map((o) => o.cap)];
    const finite = caps.filter((c): c is bigint => c !== null);
    const committed = k.usage + k.held;
    const lowest = finite.length === 0 ? INF : finite.reduce(min);
    const highest = caps.includes(null) ? INF : finite.reduce(max);
    keys.set(id, {
      roomLo: lowest === INF ? INF : lowest - committed - (took.get(id) ?? 0n),
      roomHi: highest === INF ? INF : highest - committed + (freed.get(id) ?? 0n),
    });
  }
  // Only what succeeded is in `took`: a refused command's own amount never narrows its own bound.
  return { accounts, keys };
}
