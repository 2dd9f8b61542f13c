import type { Batch } from '../batch';
import { got, LONG_TTL_MS } from '../model';

/**
 * 3. Expiries: only a sweep expires, only short holds, and a sweep leaves no due hold open. Moves the holds that
 * expired to `expired` in the model and returns them, and whether a tolerated deadlock rolled a sweep back.
 */
export function checkExpiries(b: Batch, aborted: Set<number>): { expiredNow: Set<string>; sweepAborted: boolean } {
  const { ops, outcomes } = b;
  const sweeps = ops.flatMap((o, i) => (o.kind === 'sweep' ? [outcomes[i].ok ? (outcomes[i].value as number | undefined) : 0] : []));
  const sweepAborted = ops.some((o, i) => o.kind === 'sweep' && aborted.has(i));
  // A sweep that does not say how many it expired is counted by the ledger's tables instead.
  const counted = sweeps.every((n) => n !== undefined);
  const swept = counted ? sweeps.reduce<number>((s, n) => s + (n ?? 0), 0) : b.expiredAfter - b.expiredBefore;
  if (swept !== b.expiredAfter - b.expiredBefore)
    b.fail(`the sweeps reported ${swept} expiries, the ledger shows ${b.expiredAfter - b.expiredBefore}`);
  const expiredNow = new Set<string>();
  for (const x of b.model.holds) {
    const row = b.after.holds.get(x.id);
    if (!row) b.fail(`hold ${x.id} vanished`);
    if (x.state === 'open' && row.state === 'expired') {
      if (!b.hasSweep) b.fail(`hold ${x.id} expired without a sweep`);
      if (!x.short) b.fail(`hold ${x.id} (TTL ${LONG_TTL_MS} ms) was expired long before its expiry`);
      expiredNow.add(x.id);
      x.state = 'expired';
    }
  }
  if (expiredNow.size > swept) b.fail(`${expiredNow.size} holds of this run expired, the sweeps reported ${swept}`);
  if (!sweepAborted && !b.opts.sweepMayMissForgottenHolds)
    for (const x of b.due) if (got(b.after.holds, x.id).state === 'open') b.fail(`hold ${x.id} stayed open past its expiry and a sweep`);
  return { expiredNow, sweepAborted };
}
