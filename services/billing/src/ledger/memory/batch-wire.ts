import type { Batch } from './records';

/**
 * A batch's body as ledger_write reads it: every row a JSON array, its columns by position, in the order the
 * `x->>n` of ledger_write.sql read them (change both together). About half of what a request cost PGlite in a
 * batch was its bytes (its protocol writer measures each string a character at a time, then Postgres parses the
 * jsonb), and key names were half of every row: positions halve the bytes and the parse (`pnpm bench ledger`,
 * docs/benchmarks.md). Only what the tables keep goes in: a usage record's `finished_at` stays in the journal.
 */
export function encodeBatch(body: Batch['body']): string {
  return JSON.stringify({
    inserts: body.inserts.map((h) => [
      h.id,
      h.account,
      h.key,
      h.request,
      h.idem,
      h.model,
      h.amount,
      h.state,
      h.charge,
      h.created_ms,
      h.expires_ms,
      h.closed,
    ]),
    updates: body.updates.map((u) => [u.id, u.state, u.charge, u.closed]),
    keys: body.keys.map((k) => [k.id, k.held, k.usage, k.used]),
    accounts: body.accounts.map((a) => [a.id, a.held, a.usage]),
    expired: body.expired.map((e) => [e.hold, e.request, e.account, e.key, e.model, e.created_ms]),
    records: body.records.map((c) => {
      const r = c.rec;
      return [
        c.hold,
        c.request,
        c.account,
        c.key,
        c.charge,
        c.created_ms,
        r.model,
        r.streamed,
        r.status,
        r.error_code,
        r.finish_reason,
        r.tokens_prompt,
        r.tokens_completion,
        r.native_tokens_prompt,
        r.native_tokens_completion,
        r.num_media_prompt,
        r.num_media_completion,
        r.latency,
        r.generation_time,
        r.attempts,
        r.fallback_used,
        r.origin,
        r.usage_estimated,
        r.provider ?? null,
        r.tokens_cached ?? 0,
        r.tokens_reasoning ?? 0,
        r.cache_discount_nano ?? '0',
      ];
    }),
    // checkpoint_hold keeps the record whole (a later start charges it as a close would).
    checkpoints: body.checkpoints.map((c) => [c.hold, c.charge, c.rec]),
  });
}
