-- close_hold: settle (charge the actual cost) or release (charge nothing) a hold, exactly once
-- (MONEY.md "Settle", "Release"). Called by the hold-close event consumer; events are redelivered at least
-- once, so every outcome after the first is a no-op that reports what was charged.
--
-- Results:
--   unknown       no such hold: nothing changes and no usage record is written (the consumer logs it)
--   noop          the hold was already closed: nothing changes
--   settled       open -> settled: held -= amount on key and account, usage += charge, usage record written
--   released      open -> released: held -= amount on key and account, usage record with cost 0
--   late_charged  the hold had expired (the sweeper released its amount) and the late charge still fits
--   late_dropped  the hold had expired and the late charge does not fit (or there is none): charged 0
--
-- The charge never exceeds the hold: the worst case was reserved, so anything above it is capped here, and the
-- publisher reports the upstream's figure (record.capped_from_nano) for the consumer to log.
CREATE OR REPLACE FUNCTION close_hold(p_hold text, p_outcome text, p_charge bigint, r jsonb)
RETURNS TABLE (result text, charged bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  h holds%ROWTYPE;
  c bigint;
BEGIN
  -- The hold row's lock serialises closes of one hold (a redelivery racing the first delivery, or the sweeper).
  SELECT * INTO h FROM holds WHERE holds.id = p_hold FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown'::text, 0::bigint;
    RETURN;
  END IF;
  -- Closed already: settled, released, or expired and its late settle taken (closed_at is set only here).
  IF h.state IN ('settled', 'released') OR (h.state = 'expired' AND h.closed_at IS NOT NULL) THEN
    RETURN QUERY SELECT 'noop'::text, h.charge;
    RETURN;
  END IF;
  c := CASE WHEN p_outcome = 'settle' THEN LEAST(p_charge, h.amount) ELSE 0 END;

  IF h.state = 'open' THEN
    -- The hold's amount leaves `held` on key and account; the charge, never above the amount, enters usage.
    -- It fits by construction: the amount was reserved.
    UPDATE api_keys SET held = api_keys.held - h.amount, usage = api_keys.usage + c WHERE api_keys.id = h.key_id;
    UPDATE accounts SET held = accounts.held - h.amount, total_usage = accounts.total_usage + c WHERE accounts.id = h.account_id;
    UPDATE holds SET state = CASE WHEN p_outcome = 'settle' THEN 'settled' ELSE 'released' END, charge = c, closed_at = now() WHERE holds.id = p_hold;
    result := CASE WHEN p_outcome = 'settle' THEN 'settled' ELSE 'released' END;
  ELSE
    -- Expired: the sweeper already gave the amount back, so nothing is reserved for this charge. It is taken only
    -- if it still fits, checked like a new hold: the key's cap first, then the account's available balance.
    IF c > 0 THEN
      UPDATE api_keys SET usage = api_keys.usage + c
       WHERE api_keys.id = h.key_id AND (api_keys.spend_limit IS NULL OR api_keys.usage + api_keys.held + c <= api_keys.spend_limit);
      IF FOUND THEN
        UPDATE accounts SET total_usage = accounts.total_usage + c
         WHERE accounts.id = h.account_id AND accounts.total_credits - accounts.total_usage - accounts.held >= c;
        IF NOT FOUND THEN
          -- The account cannot cover it: take the key's share back, so key and account agree on a charge of 0.
          UPDATE api_keys SET usage = api_keys.usage - c WHERE api_keys.id = h.key_id;
          c := 0;
        END IF;
      ELSE
        c := 0;
      END IF;
    END IF;
    -- closed_at marks the late settle as taken, so a redelivery is a no-op; the state stays 'expired'.
    UPDATE holds SET charge = c, closed_at = now() WHERE holds.id = p_hold;
    result := CASE WHEN c > 0 THEN 'late_charged' ELSE 'late_dropped' END;
  END IF;

  PERFORM write_usage_record(h, r, c);
  charged := c;
  RETURN NEXT;
END
$fn$;

-- The usage record carries what was charged, so the records of an account sum to its total_usage. An expired
-- hold already has the sweeper's record (hold_expired); the late close overwrites it with what really happened.
-- One statement for close_hold and close_holds alike. PL/pgSQL, not SQL: PostgreSQL plans a SQL function's statement
-- again at every call, and keeps a PL/pgSQL function's plan for the session.
CREATE OR REPLACE FUNCTION write_usage_record(h holds, r jsonb, c bigint)
RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
INSERT INTO usage_records (request_id, hold_id, account_id, key_id, model, streamed, status, error_code, finish_reason,
  tokens_prompt, tokens_completion, native_tokens_prompt, native_tokens_completion, num_media_prompt, num_media_completion,
  latency, generation_time, attempts, fallback_used, origin, usage_estimated, provider, tokens_cached, tokens_reasoning,
  cache_discount, total_cost, created_at)
VALUES (h.request_id, h.id, h.account_id, h.key_id, r->>'model', (r->>'streamed')::boolean, r->>'status', r->>'error_code',
  r->>'finish_reason', (r->>'tokens_prompt')::int, (r->>'tokens_completion')::int, (r->>'native_tokens_prompt')::int,
  (r->>'native_tokens_completion')::int, COALESCE((r->>'num_media_prompt')::int, 0), COALESCE((r->>'num_media_completion')::int, 0),
  (r->>'latency')::int, (r->>'generation_time')::int, (r->>'attempts')::int, (r->>'fallback_used')::boolean,
  COALESCE(r->>'origin', ''), COALESCE((r->>'usage_estimated')::boolean, false), r->>'provider',
  COALESCE((r->>'tokens_cached')::int, 0), COALESCE((r->>'tokens_reasoning')::int, 0),
  COALESCE((r->>'cache_discount_nano')::bigint, 0), c, h.created_at)
ON CONFLICT (request_id) DO UPDATE SET
  status = EXCLUDED.status, error_code = EXCLUDED.error_code, finish_reason = EXCLUDED.finish_reason,
  tokens_prompt = EXCLUDED.tokens_prompt, tokens_completion = EXCLUDED.tokens_completion,
  native_tokens_prompt = EXCLUDED.native_tokens_prompt, native_tokens_completion = EXCLUDED.native_tokens_completion,
  latency = EXCLUDED.latency, generation_time = EXCLUDED.generation_time, attempts = EXCLUDED.attempts,
  fallback_used = EXCLUDED.fallback_used, usage_estimated = EXCLUDED.usage_estimated, provider = EXCLUDED.provider,
  tokens_cached = EXCLUDED.tokens_cached, tokens_reasoning = EXCLUDED.tokens_reasoning, cache_discount = EXCLUDED.cache_discount,
  total_cost = EXCLUDED.total_cost,
  streamed = EXCLUDED.streamed;
END
$fn$;
