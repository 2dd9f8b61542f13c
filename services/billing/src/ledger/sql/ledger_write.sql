-- ledger_write: records a batch of the embedded in-memory ledger's decisions (ledger/memory/).
--
-- The memory ledger has already decided every hold, settle, release and expiry with place_hold's and close_hold's
-- rules, against the same figures; this only writes the outcome, set-based: hold rows, the net change of `held`
-- and usage per key and per account, usage records. A batch of thousands of decisions is a handful of statements,
-- which is what lets PGlite keep up with the in-memory ledger.
--
-- Exactly once: the batch covers journal records (p_from, p_to], and ledger_journal.applied_seq moves from p_from to
-- p_to in this transaction. A batch already applied (a replay after a crash) changes nothing; a gap is a bug and
-- fails loudly rather than skip decisions. The tables' CHECK constraints still stand behind every write.
CREATE OR REPLACE FUNCTION ledger_write(p_from bigint, p_to bigint, p jsonb)
RETURNS boolean
LANGUAGE plpgsql AS $fn$
DECLARE
  applied bigint;
BEGIN
  SELECT applied_seq INTO applied FROM ledger_journal FOR UPDATE;
  IF applied >= p_to THEN
    RETURN false;
  END IF;
  IF applied <> p_from THEN
    RAISE EXCEPTION 'ledger journal gap: applied up to %, batch starts after %', applied, p_from;
  END IF;
  UPDATE ledger_journal SET applied_seq = p_to;
  -- These rows are a replica's: decisions the in-memory ledger made against accounts and keys it read from these
  -- tables, which are never deleted. So, as a replica applying its primary's changes, the batch skips the foreign
  -- keys' triggers (a fifth of its cost on PGlite, 4 checks per request); CHECKs and unique indexes still stand.
  -- Only a superuser may (PGlite's only role is one); any other keeps every check, at that cost.
  IF current_setting('is_superuser') = 'on' THEN
    PERFORM set_config('session_replication_role', 'replica', true);
  END IF;

  -- Every row of p is a JSON array, its columns by position: ledger/memory/batch-wire.ts writes them in this order.
  -- Closes of holds written by earlier batches come before the new holds: a new hold may carry the
  -- Idempotency-Key of one closing in this batch, and the partial unique index allows one open hold per key.
  UPDATE holds h SET state = x->>1, charge = (x->>2)::bigint, closed_at = CASE WHEN (x->>3)::boolean THEN now() ELSE h.closed_at END
    FROM jsonb_array_elements(p->'updates') AS x
   WHERE h.id = x->>0;
  INSERT INTO holds (id, account_id, key_id, request_id, idempotency_key, model, amount, state, charge, created_at, expires_at, closed_at)
  SELECT x->>0, x->>1, x->>2, x->>3, x->>4, x->>5, (x->>6)::bigint, x->>7, (x->>8)::bigint,
         to_timestamp((x->>9)::bigint / 1000.0), to_timestamp((x->>10)::bigint / 1000.0), CASE WHEN (x->>11)::boolean THEN now() END
    FROM jsonb_array_elements(p->'inserts') AS x;

  -- A checkpoint is spent once its hold leaves open (written by an earlier batch: one placed here had its dropped).
  DELETE FROM hold_checkpoints c USING jsonb_array_elements(p->'updates') AS x
   WHERE c.hold_id = x->>0 AND x->>1 <> 'open';
  -- After the inserts, whose rows they point at; by checkpoint_hold's rule (the highest of an open hold is kept).
  PERFORM checkpoint_hold(x->>0, (x->>1)::bigint, x->2) FROM jsonb_array_elements(p->'checkpoints') AS x;

  UPDATE api_keys k SET held = k.held + (x->>1)::bigint, usage = k.usage + (x->>2)::bigint,
         last_used_at = CASE WHEN (x->>3)::boolean THEN now() ELSE k.last_used_at END
    FROM jsonb_array_elements(p->'keys') AS x
   WHERE k.id = x->>0;
  UPDATE accounts a SET held = a.held + (x->>1)::bigint, total_usage = a.total_usage + (x->>2)::bigint
    FROM jsonb_array_elements(p->'accounts') AS x
   WHERE a.id = x->>0;

  -- As expire_hold writes them; a late settle in the same batch then overwrites the record below.
  INSERT INTO usage_records (request_id, hold_id, account_id, key_id, model, streamed, status, error_code, total_cost, created_at)
  SELECT x->>1, x->>0, x->>2, x->>3, x->>4, false, 'failed', 'hold_expired', 0, to_timestamp((x->>5)::bigint / 1000.0)
    FROM jsonb_array_elements(p->'expired') AS x
  ON CONFLICT (request_id) DO NOTHING;
  -- As close_hold writes them.
  INSERT INTO usage_records (request_id, hold_id, account_id, key_id, model, streamed, status, error_code, finish_reason,
    tokens_prompt, tokens_completion, native_tokens_prompt, native_tokens_completion, num_media_prompt, num_media_completion,
    latency, generation_time, attempts, fallback_used, origin, usage_estimated, provider, tokens_cached, tokens_reasoning,
    cache_discount, total_cost, created_at)
  SELECT x->>1, x->>0, x->>2, x->>3, x->>6, (x->>7)::boolean, x->>8, x->>9, x->>10,
    (x->>11)::int, (x->>12)::int, (x->>13)::int, (x->>14)::int, COALESCE((x->>15)::int, 0), COALESCE((x->>16)::int, 0),
    (x->>17)::int, (x->>18)::int, (x->>19)::int, (x->>20)::boolean, COALESCE(x->>21, ''), COALESCE((x->>22)::boolean, false), x->>23,
    COALESCE((x->>24)::int, 0), COALESCE((x->>25)::int, 0), COALESCE((x->>26)::bigint, 0),
    (x->>4)::bigint, to_timestamp((x->>5)::bigint / 1000.0)
    FROM jsonb_array_elements(p->'records') AS x
  ON CONFLICT (request_id) DO UPDATE SET
    status = EXCLUDED.status, error_code = EXCLUDED.error_code, finish_reason = EXCLUDED.finish_reason,
    tokens_prompt = EXCLUDED.tokens_prompt, tokens_completion = EXCLUDED.tokens_completion,
    native_tokens_prompt = EXCLUDED.native_tokens_prompt, native_tokens_completion = EXCLUDED.native_tokens_completion,
    latency = EXCLUDED.latency, generation_time = EXCLUDED.generation_time, attempts = EXCLUDED.attempts,
    fallback_used = EXCLUDED.fallback_used, usage_estimated = EXCLUDED.usage_estimated, provider = EXCLUDED.provider,
    tokens_cached = EXCLUDED.tokens_cached, tokens_reasoning = EXCLUDED.tokens_reasoning, cache_discount = EXCLUDED.cache_discount,
    total_cost = EXCLUDED.total_cost,
    streamed = EXCLUDED.streamed;
  RETURN true;
END
$fn$;
