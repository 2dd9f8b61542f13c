import { GatewayError } from '@gateway/errors';
import type { Hold } from '@gateway/billing-client';
import type { Batch } from '../batch';
import { errorName, outcomeName } from '../describe';
import type { Placed } from '../model';

/**
 * 1. Every outcome is one the ledger may give for its command; no unexpected error (a deadlock, a constraint).
 * Returns the holds placed, and the commands a tolerated deadlock rolled back.
 */
export function checkOutcomes(b: Batch): { placedNow: Placed[]; aborted: Set<number> } {
  const placedNow: Placed[] = [];
  const aborted = new Set<number>();
  for (const [i, op] of b.ops.entries()) {
    const o = b.outcomes[i];
    if (!o.ok && b.opts.tolerateSweepDeadlock && b.hasSweep && (o.error as { code?: string })?.code === '40P01') {
      aborted.add(i);
      b.tally.count(`${op.kind}:deadlock (known defect, rolled back)`);
      continue;
    }
    if (!o.ok) {
      const e = o.error;
      const code = e instanceof GatewayError ? e.code : undefined;
      const allowed =
        (op.kind === 'place' && (code === 'insufficient_credits' || (code === 'duplicate_request' && op.idem !== null))) ||
        (op.kind === 'retry' && code === 'duplicate_request') ||
        (op.kind === 'credit' && op.amount < 0n && code === 'invalid_request');
      if (!allowed) b.fail(`unexpected error from ${op.kind}: ${(e as Error)?.message}`, { code: (e as { code?: string })?.code });
    }
    b.tally.count(`${op.kind}:${o.ok ? outcomeName(op, o.value) : errorName(o.error)}`);
    if (op.kind === 'place' && o.ok) placedNow.push({ op, hold: o.value as Hold, i });
  }
  return { placedNow, aborted };
}
