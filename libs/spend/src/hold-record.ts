import { type ProviderPreferences, providerPreferencesSchema } from '@gateway/config';
import { holdRecordSchema, type HoldRecordJson } from '@gateway/events';

/**
 * An open hold as plain data: what was reserved, for whom, and what its usage record will need. PaidCall keeps
 * one; anything else that has it (a job row read back after a restart) can close the hold with a HoldCloser.
 */
export interface HoldRecord {
  readonly holdId: string;
  readonly accountId: string;
  readonly keyId: string;
  readonly requestId: string;
  /** nano-USD reserved: the cap of any charge. */
  readonly amountNano: bigint;
  readonly expiresAt: string;
  readonly model: string;
  readonly streamed: boolean;
  /** epoch ms when the request began. */
  readonly startedAt: number;
  /** The client's provider preferences, for whatever process makes the call. */
  readonly provider?: ProviderPreferences;
}

/** The JSON form (`holdRecordSchema` in @gateway/events): the amount as a decimal string, since JSON has no bigint. */
export function holdRecordToJSON(r: HoldRecord): HoldRecordJson {
  return {
    hold_id: r.holdId,
    account_id: r.accountId,
    key_id: r.keyId,
    request_id: r.requestId,
    amount_nano: r.amountNano.toString(),
    expires_at: r.expiresAt,
    model: r.model,
    streamed: r.streamed,
    started_at: new Date(r.startedAt).toISOString(),
    ...(r.provider ? { provider: r.provider } : {}),
  };
}

/** Reads the JSON form back; throws (a ZodError naming the field) on anything that is not one. */
export function holdRecordFromJSON(json: unknown): HoldRecord {
  const j = holdRecordSchema.parse(json);
  return {
    holdId: j.hold_id,
    accountId: j.account_id,
    keyId: j.key_id,
    requestId: j.request_id,
    amountNano: BigInt(j.amount_nano),
    expiresAt: j.expires_at,
    model: j.model,
    streamed: j.streamed,
    startedAt: Date.parse(j.started_at),
    ...(j.provider ? { provider: providerPreferencesSchema.parse(j.provider) } : {}),
  };
}
