import type { Hold } from '@gateway/billing-client';
import type { Batch } from '../batch';
import { got } from '../model';

/** 5. Retries of a request id: the same hold while it is open, 409 once it has closed; never a second hold. */
export function checkRetries(b: Batch, aborted: Set<number>): void {
  for (const [i, op] of b.ops.entries()) {
    if (op.kind !== 'retry' || aborted.has(i)) continue;
    const o = b.outcomes[i];
    const was = got(b.stateBefore, op.hold.id);
    if (o.ok) {
      const hold = o.value as Hold;
      if (hold.holdId !== op.hold.id || hold.amountNano !== op.hold.amount) b.fail(`a retried request got hold ${hold.holdId}, not ${op.hold.id}`);
      if (was.state !== 'open') b.fail(`a retried request got its hold ${op.hold.id} back after it had closed`);
    } else {
      if (!/already finished/.test((o.error as Error).message)) b.fail(`a retried request was refused: ${(o.error as Error).message}`);
      if (got(b.after.holds, op.hold.id).state === 'open') b.fail(`a retried request was refused as finished while ${op.hold.id} is open`);
    }
  }
}
