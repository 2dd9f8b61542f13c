import type { EventBus } from '@gateway/bus';
import type { Db } from '@gateway/db';
import { type AccountOpened, EVENT_TYPES, type HoldClose, TOPICS, type UsageRecorded } from '@gateway/events';
import type { CloseResult } from './ledger/holds';

/**
 * `usage.recorded.v1` for a close the ledger applied (or had applied: a redelivery repeats the same event id, so
 * consumers count it once). `outcome` is what the ledger did, which can differ from what was asked: an expired
 * hold's late charge that no longer fits is charged nothing.
 */
export async function publishUsage(bus: EventBus, ev: HoldClose, result: Exclude<CloseResult, 'unknown'>, charged: bigint): Promise<void> {
  const outcome = result === 'released' || result === 'late_dropped' ? 'release' : result === 'noop' ? ev.outcome : 'settle';
  const data: UsageRecorded = {
    hold_id: ev.hold_id,
    account_id: ev.account_id,
    request_id: ev.request_id,
    model: ev.record.model,
    outcome,
    charge_nano: (outcome === 'release' ? 0n : charged).toString(),
    status: ev.record.status,
    tokens_prompt: ev.record.tokens_prompt,
    tokens_completion: ev.record.tokens_completion,
    finished_at: ev.record.finished_at,
  };
  await bus.publish(TOPICS.usage, { id: `${ev.hold_id}:usage`, type: EVENT_TYPES.usageRecorded, key: ev.account_id, data });
}

/** `account.opened.v1`; the id is the account's, so announcing it again (every billing start) is harmless. */
export async function publishAccountOpened(bus: EventBus, accountId: string, openedAt: Date | string): Promise<void> {
  const data: AccountOpened = { account_id: accountId, opened_at: new Date(openedAt).toISOString() };
  await bus.publish(TOPICS.accounts, { id: `account:${accountId}:opened`, type: EVENT_TYPES.accountOpened, key: accountId, data });
}

/**
 * Every account, announced once per billing start: a consumer that subscribed after an account was created (or
 * whose publish was lost to a crash) still counts it. Paged by id so a large ledger is never read at once.
 */
export async function announceAccounts(db: Db, bus: EventBus, pageSize = 500): Promise<number> {
  let after = '';
  let n = 0;
  for (;;) {
    const rows = await db.query<{ id: string; created_at: Date | string }>('SELECT id, created_at FROM accounts WHERE id > $1 ORDER BY id LIMIT $2', [
      after,
      pageSize,
    ]);
    for (const r of rows) await publishAccountOpened(bus, r.id, r.created_at);
    n += rows.length;
    if (rows.length < pageSize) return n;
    after = rows[rows.length - 1].id;
  }
}
