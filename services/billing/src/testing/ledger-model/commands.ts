/** The commands of a run: resolved against the model, and run on the ledger under test. */
import { rid, checkpointEvent, closeEvent } from './events';
import type { LedgerHarness } from './harness';
import { type Cmd, LONG_TTL_MS, type Model, type Op, SHORT_TTL_MS, UNIT } from './model';

/** The command as it applies to the accounts, keys and holds opened so far (undefined: no hold to act on yet). */
export function resolveCmd(model: Model, c: Cmd): Op | undefined {
  const acct = (i: number) => model.accounts[i % model.accounts.length];
  const hold = (i: number) => (model.holds.length === 0 ? undefined : model.holds[i % model.holds.length]);
  switch (c.kind) {
    case 'place': {
      const a = acct(c.account);
      // A key of another account, when there is one: place_hold must refuse it and hold nothing anywhere.
      const foreign = c.foreign && model.accounts.length > 1;
      const keyOwner = foreign ? acct(c.account + 1) : a;
      return {
        kind: 'place',
        account: a.id,
        key: keyOwner.keys[c.key % keyOwner.keys.length],
        amount: BigInt(c.units) * UNIT + BigInt(c.nano),
        short: c.short,
        idem: c.idem === null ? null : `idem-${c.idem}`,
        foreign,
        requestId: rid('req_prop'),
      };
    }
    case 'retry': {
      const target = hold(c.hold);
      return target && { kind: 'retry', hold: target };
    }
    case 'settle': {
      const target = hold(c.hold);
      return target && { kind: 'close', hold: target, outcome: 'settle', charge: (target.amount * BigInt(c.pct)) / 100n };
    }
    case 'release': {
      const target = hold(c.hold);
      return target && { kind: 'close', hold: target, outcome: 'release', charge: 0n };
    }
    case 'checkpoint': {
      const target = hold(c.hold);
      return target && { kind: 'checkpoint', hold: target, charge: (target.amount * BigInt(c.pct)) / 100n };
    }
    case 'ghost':
      return { kind: 'ghost', outcome: c.settle ? 'settle' : 'release' };
    case 'sweep':
      return { kind: 'sweep' };
    case 'credit':
      return { kind: 'credit', account: acct(c.account).id, amount: BigInt(c.units) * UNIT };
    case 'cap': {
      const a = acct(c.account);
      return { kind: 'cap', key: a.keys[c.key % a.keys.length], cap: c.units === null ? null : BigInt(c.units) * UNIT };
    }
  }
}

/** Runs one command on the ledger, or on the levers beside it. */
export function execOp(h: LedgerHarness, model: Model, op: Op): Promise<unknown> {
  const { ledger } = h;
  switch (op.kind) {
    case 'place':
      return ledger.placeHold({
        accountId: op.account,
        keyId: op.key,
        requestId: op.requestId,
        amountNano: op.amount,
        model: 'prop/model',
        ttlMs: op.short ? SHORT_TTL_MS : LONG_TTL_MS,
        ...(op.idem === null ? {} : { idempotencyKey: op.idem }),
      });
    case 'retry': {
      const t = op.hold;
      return ledger.placeHold({
        accountId: t.account,
        keyId: t.key,
        requestId: t.requestId,
        amountNano: t.amount,
        model: 'prop/model',
        ttlMs: t.short ? SHORT_TTL_MS : LONG_TTL_MS,
        ...(t.idem === null ? {} : { idempotencyKey: t.idem }),
      });
    }
    case 'close':
      return ledger.closeHold(closeEvent(op.hold, op.outcome, op.charge));
    case 'checkpoint':
      return ledger.checkpointHold(checkpointEvent(op.hold, op.charge));
    case 'ghost':
      return ledger.closeHold(closeEvent({ id: rid('hold_ghost'), account: model.accounts[0].id, requestId: rid('req_ghost') }, op.outcome, 1_000n));
    case 'sweep':
      return h.sweep();
    case 'credit':
      return h.credit(op.account, op.amount);
    case 'cap':
      return h.setCap(op.key, op.cap);
  }
}
