import type { Batch, CloseSeen } from '../batch';
import { got, max } from '../model';

/**
 * 4b. Checkpoints: kept only while the hold is open and only if not below the one kept; the highest offered to a
 * hold that stays open is always kept (whatever the order). A hold closed or expired in the batch may take any.
 * Moves each open hold's kept checkpoint in the model.
 */
export function checkCheckpoints(
  b: Batch,
  seen: { expiredNow: Set<string>; closesOf: Map<string, CloseSeen[]>; offersOf: Map<string, bigint[]> },
): void {
  const { expiredNow, closesOf, offersOf } = seen;
  const closedNow = (id: string) => expiredNow.has(id) || (closesOf.get(id) ?? []).some((c) => c.result !== 'noop');
  for (const [i, op] of b.ops.entries()) {
    const o = b.outcomes[i];
    if (op.kind !== 'checkpoint' || !o.ok) continue;
    const kept = o.value as boolean;
    const x = op.hold;
    const was = got(b.stateBefore, x.id);
    if (was.state !== 'open') {
      if (kept) b.fail(`a checkpoint of ${x.id} (${was.state}) was kept after its hold had left open`);
      continue;
    }
    if (closedNow(x.id)) continue;
    if (x.checkpoint !== null && op.charge < x.checkpoint && kept) b.fail(`checkpoint ${op.charge} of ${x.id} kept below ${x.checkpoint}`);
    if (op.charge === got(offersOf, x.id).reduce(max) && (x.checkpoint === null || op.charge >= x.checkpoint) && !kept)
      b.fail(`checkpoint ${op.charge} of open hold ${x.id}, the highest, was not kept`);
  }
  for (const [id, offers] of offersOf) {
    const x = got(b.model.byId, id);
    if (x.state !== 'open') continue;
    const highest = offers.reduce(max);
    x.checkpoint = x.checkpoint === null ? highest : max(x.checkpoint, highest);
  }
}
