/** The events a money flow publishes for the commands of a run. */
import crypto from 'node:crypto';
import type { HoldCheckpoint, HoldClose } from '@gateway/events';
import { usageRecord } from '../ledger-fixtures';
import type { ModelHold } from './model';

export const rid = (prefix: string) => `${prefix}_${crypto.randomBytes(9).toString('hex')}`;

/**
 * The hold-close event a money flow publishes: a settle with its record, or a release as a failed request. It names
 * the hold's key as the real publisher does (so closes batch per key on PostgreSQL); a ghost hold has none.
 */
export function closeEvent(
  h: { id: string; account: string; key?: string; requestId: string },
  outcome: 'settle' | 'release',
  charge: bigint,
): HoldClose {
  const settle = outcome === 'settle';
  return {
    hold_id: h.id,
    account_id: h.account,
    ...(h.key ? { key_id: h.key } : {}),
    request_id: h.requestId,
    outcome,
    charge_nano: charge.toString(),
    record: {
      ...usageRecord,
      model: 'prop/model',
      generation_time: 1,
      ...(settle ? {} : { status: 'failed', error_code: 'upstream_unavailable', finish_reason: null }),
    },
  };
}

/** A stream's checkpoint as its flow publishes it: a settle of what was delivered, on the record an expiry keeps. */
export function checkpointEvent(h: ModelHold, charge: bigint): HoldCheckpoint {
  const ev = closeEvent(h, 'settle', charge);
  return { ...ev, outcome: 'settle', record: { ...ev.record, status: 'failed', error_code: 'hold_expired', finish_reason: 'error' } };
}
