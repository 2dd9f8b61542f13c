import type { Batch } from '../batch';
import type { ModelHold, Placed } from '../model';

/** 2. New holds: each placed hold is new, is in the ledger as asked, and joins the model (open). */
export function checkNewHolds(b: Batch, placedNow: Placed[]): void {
  const { model } = b;
  for (const { op, hold } of placedNow) {
    if (op.foreign) b.fail("a hold was placed on another account's key");
    if (model.byId.has(hold.holdId)) b.fail(`a new request got an existing hold ${hold.holdId}`);
    const row = b.after.holds.get(hold.holdId);
    if (!row) b.fail(`placed hold ${hold.holdId} is not in the ledger`);
    if (row.account !== op.account || row.key !== op.key || row.amount !== op.amount || row.request !== op.requestId || row.idem !== op.idem)
      b.fail(`placed hold ${hold.holdId} differs from its request`, { row });
    if (hold.amountNano !== op.amount) b.fail(`placed hold answered amount ${hold.amountNano}, asked ${op.amount}`);
    const mh: ModelHold = {
      id: hold.holdId,
      requestId: op.requestId,
      account: op.account,
      key: op.key,
      amount: op.amount,
      short: op.short,
      idem: op.idem,
      state: 'open',
      lateClosed: false,
      lateOutcome: null,
      charge: 0n,
      checkpoint: null,
    };
    model.holds.push(mh);
    model.byId.set(mh.id, mh);
  }
}
