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
    tokens_cached: ev.record.tokens_cached ?? 0,
    tokens_reasoning: ev.record.tokens_reasoning ?? 0,
    finished_at: ev.record.finished_at,
  };
  await announceUsage(bus, data);
}

/** One id per hold, whichever path closed it: consumers count a hold once, however many times it is announced. */
const announceUsage = (bus: EventBus, data: UsageRecorded) =>
  bus.publish(TOPICS.usage, { id: `${data.hold_id}:usage`, type: EVENT_TYPES.usageRecorded, key: data.account_id, data });

/**
 * `usage.recorded.v1` for the holds among `holdIds` (just expired by a sweep) that the sweep charged their last
 * checkpoint: a stream whose closer died is announced like any other close, read back from the rows the sweep
 * wrote (the hold's charge, its usage record), finished when the sweep charged it. A charge of 0 (the checkpoint no longer
 * fitted) is a release, as publishUsage calls a late_dropped close. A hold that expired with no checkpoint is not
 * announced: nothing was delivered, and a late close announces it then. Published after the sweep committed, so a
 * crash between the two loses the announcement (the catalogue's counts), never money.
 */
export async function publishExpiryCharges(db: Db, bus: EventBus, holdIds: string[]): Promise<number> {
  if (holdIds.length === 0) return 0;
  const rows = await db.query<{
    hold_id: string;
    account_id: string;
    request_id: string;
    model: string;
    charge: string;
    status: UsageRecorded['status'];
    tokens_prompt: number;
    tokens_completion: number;
    tokens_cached: number;
    tokens_reasoning: number;
    finished_at: string;
  }>(
    `SELECT h.id AS hold_id, h.account_id, h.request_id, u.model, h.charge::text AS charge, u.status, u.tokens_prompt, u.tokens_completion,
            u.tokens_cached, u.tokens_reasoning,
            to_char(h.closed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS finished_at
       FROM holds h JOIN usage_records u ON u.hold_id = h.id
      WHERE h.id = ANY($1::text[]) AND h.state = 'expired' AND h.closed_at IS NOT NULL`,
    [holdIds],
  );
  for (const r of rows) {
    const settled = BigInt(r.charge) > 0n;
    await announceUsage(bus, {
      hold_id: r.hold_id,
      account_id: r.account_id,
      request_id: r.request_id,
      model: r.model,
      outcome: settled ? 'settle' : 'release',
      charge_nano: r.charge,
      status: r.status,
      tokens_prompt: r.tokens_prompt,
      tokens_completion: r.tokens_completion,
      tokens_cached: r.tokens_cached,
      tokens_reasoning: r.tokens_reasoning,
      finished_at: r.finished_at,
    });
  }
  return rows.length;
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
