import crypto from 'node:crypto';
import type { Db } from '@gateway/db';
import type { Hold, HoldRequest } from '@gateway/billing-client';
import type { HoldClose, UsageRecord } from '@gateway/events';
import { parseUsd } from '@gateway/money';
import { createAccount } from '../ledger/accounts';
import { createKey } from '../ledger/keys';
import type { Ledger } from '../ledger/holds';
import type { HoldFacts } from '../ledger/memory/records';

/** An account and one key on it: who places holds in the tests. */
export interface Payer {
  accountId: string;
  keyId: string;
}

export interface PlacedHold extends Hold {
  requestId: string;
}

/** A fresh account with `credits` USD and one key, capped at `keyLimit` USD when given. */
export async function payer(db: Db, credits: string, keyLimit?: string): Promise<Payer> {
  const accountId = await createAccount(db, parseUsd(credits), {});
  const { key_id } = await createKey(db, accountId, { limitNano: keyLimit ? parseUsd(keyLimit) : null });
  return { accountId, keyId: key_id };
}

/** Places a hold of `amount` USD for a new request id (60 s to expiry unless `extra` says otherwise). */
export async function placeHold(ledger: Ledger, who: Payer, amount: string, extra: Partial<HoldRequest> = {}): Promise<PlacedHold> {
  const requestId = extra.requestId ?? `req_${crypto.randomBytes(8).toString('hex')}`;
  const hold = await ledger.placeHold({ ...who, requestId, amountNano: parseUsd(amount), model: 'm/x', ttlMs: 60_000, ...extra });
  return { ...hold, requestId };
}

/** A hold of `who` for model m/x as the in-memory ledger's records carry it: id `hold_<name>`, request `req_<name>`. */
export function holdFacts(who: Payer, name: string, amountNano: bigint): HoldFacts {
  return {
    id: `hold_${name}`,
    account: who.accountId,
    key: who.keyId,
    request: `req_${name}`,
    model: 'm/x',
    amount: amountNano.toString(),
    created_ms: Date.now(),
  };
}

export const usageRecord: UsageRecord = {
  model: 'm/x',
  streamed: false,
  status: 'succeeded',
  error_code: null,
  finish_reason: 'stop',
  tokens_prompt: 1,
  tokens_completion: 1,
  native_tokens_prompt: 1,
  native_tokens_completion: 1,
  num_media_prompt: 0,
  num_media_completion: 0,
  latency: 1,
  generation_time: 2,
  attempts: 1,
  fallback_used: false,
  origin: '',
  finished_at: '2025-01-01T00:00:00.000Z',
  usage_estimated: false,
};

/** The hold-close event the money flow publishes: settle with `charge` USD, or release. */
export function closeEvent(h: PlacedHold, who: Payer, outcome: 'settle' | 'release', charge: string, record: Partial<UsageRecord> = {}): HoldClose {
  return {
    hold_id: h.holdId,
    account_id: who.accountId,
    key_id: who.keyId,
    request_id: h.requestId,
    outcome,
    charge_nano: parseUsd(charge).toString(),
    record: {
      ...usageRecord,
      ...(outcome === 'release' ? { status: 'failed', error_code: 'upstream_unavailable', finish_reason: null } : {}),
      ...record,
    },
  };
}
