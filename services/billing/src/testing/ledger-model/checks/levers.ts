import type { Batch } from '../batch';
import { type CapOp, got, max } from '../model';

/** 7. The levers: top-ups land on the model's credits, caps take one of the values set in the batch. */
export function checkLevers(b: Batch): void {
  const { ops, outcomes, model, before } = b;
  for (const [i, op] of ops.entries()) {
    if (op.kind === 'credit' && outcomes[i].ok) for (const a of model.accounts) if (a.id === op.account) a.credits += op.amount;
  }
  for (const [keyId, k] of b.after.keys) {
    const set = ops.filter((o): o is CapOp => o.kind === 'cap' && o.key === keyId).map((o) => o.cap);
    if (set.length > 0 && !set.includes(k.cap)) b.fail(`key ${keyId}'s cap is ${k.cap}, none of the values set: ${set.join(', ')}`);
    if (set.length === 0 && k.cap !== model.caps.get(keyId)) b.fail(`key ${keyId}'s cap changed by itself to ${k.cap}`);
    model.caps.set(keyId, k.cap);
    // Never overspend a key: holds and late charges fit the cap in force when they were taken, and a lowered cap
    // cancels nothing already held, so usage + held never grows beyond max(any cap of the batch, what it was before).
    const caps = [got(before.keys, keyId).cap, ...set];
    const committedBefore = got(before.keys, keyId).usage + got(before.keys, keyId).held;
    if (set.some((c) => c !== null && c < committedBefore)) b.tally.count('seen:cap lowered below usage+held');
    if (!caps.includes(null)) {
      const kb = got(before.keys, keyId);
      const ceiling = [kb.usage + kb.held, ...(caps as bigint[])].reduce(max);
      if (k.usage + k.held > ceiling) b.fail(`key ${keyId} committed ${k.usage + k.held}, above its cap and what it had before (${ceiling})`);
    }
  }
}
