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

  -- Closes of holds written by earlier batches come before the new holds: a new hold may carry the
  -- Idempotency-Key of one closing in this batch, and the partial unique index allows one open hold per key.
  UPDATE holds h SET state = x.state, charge = x.charge, closed_at = CASE WHEN x.closed THEN now() ELSE h.closed_at END
    FROM jsonb_to_recordset(p->'updates') AS x(id text, state text, charge bigint, closed boolean)
   WHERE h.id = x.id;
  INSERT INTO holds (id, account_id, key_id, request_id, idempotency_key, model, amount, state, charge, created_at, expires_at, closed_at)
  SELECT x.id, x.account, x.key, x.request, x.idem, x.model, x.amount, x.state, x.charge,
         to_timestamp(x.created_ms / 1000.0), to_timestamp(x.expires_ms / 1000.0), CASE WHEN x.closed THEN now() END
    FROM jsonb_to_recordset(p->'inserts') AS x(id text, account text, key text, request text, idem text, model text,
         amount bigint, state text, charge bigint, created_ms bigint, expires_ms bigint, closed boolean);

  -- A checkpoint is spent once its hold leaves open (written by an earlier batch: one placed here had its dropped).
  DELETE FROM hold_checkpoints c USING jsonb_to_recordset(p->'updates') AS x(id text, state text)
   WHERE c.hold_id = x.id AND x.state <> 'open';
  -- After the inserts, whose rows they point at; by checkpoint_hold's rule (the highest of an open hold is kept).
  PERFORM checkpoint_hold(x.hold, x.charge, x.rec)
     FROM jsonb_to_recordset(COALESCE(p->'checkpoints', '[]')) AS x(hold text, charge bigint, rec jsonb);

  UPDATE api_keys k SET held = k.held + x.held, usage = k.usage + x.usage,
         last_used_at = CASE WHEN x.used THEN now() ELSE k.last_used_at END
    FROM jsonb_to_recordset(p->'keys') AS x(id text, held bigint, usage bigint, used boolean)
   WHERE k.id = x.id;
  UPDATE accounts a SET held = a.held + x.held, total_usage = a.total_usage + x.usage
    FROM jsonb_to_recordset(p->'accounts') AS x(id text, held bigint, usage bigint)
   WHERE a.id = x.id;

  -- As expire_hold writes them; a late settle in the same batch then overwrites the record below.
  INSERT INTO usage_records (request_id, hold_id, account_id, key_id, model, streamed, status, error_code, total_cost, created_at)
  SELECT x.request, x.hold, x.account, x.key, x.model, false, 'failed', 'hold_expired', 0, to_timestamp(x.created_ms / 1000.0)
    FROM jsonb_to_recordset(p->'expired') AS x(hold text, request text, account text, key text, model text, created_ms bigint)
  ON CONFLICT (request_id) DO NOTHING;
  -- As close_hold writes them.
  INSERT INTO usage_records (request_id, hold_id, account_id, key_id, model, streamed, status, error_code, finish_reason,
    tokens_prompt, tokens_completion, native_tokens_prompt, native_tokens_completion, num_media_prompt, num_media_completion,
    latency, generation_time, attempts, fallback_used, origin, usage_estimated, total_cost, created_at)
  SELECT c->>'request', c->>'hold', c->>'account', c->>'key', r->>'model', (r->>'streamed')::boolean, r->>'status', r->>'error_code',
    r->>'finish_reason', (r->>'tokens_prompt')::int, (r->>'tokens_completion')::int, (r->>'native_tokens_prompt')::int,
    (r->>'native_tokens_completion')::int, COALESCE((r->>'num_media_prompt')::int, 0), COALESCE((r->>'num_media_completion')::int, 0),
    (r->>'latency')::int, (r->>'generation_time')::int, (r->>'attempts')::int, (r->>'fallback_used')::boolean,
    COALESCE(r->>'origin', ''), COALESCE((r->>'usage_estimated')::boolean, false), (c->>'charge')::bigint,
    to_timestamp((c->>'created_ms')::bigint / 1000.0)
    FROM jsonb_array_elements(p->'records') AS e(c), LATERAL (SELECT c->'rec' AS r) AS rr
  ON CONFLICT (request_id) DO UPDATE SET
    status = EXCLUDED.status, error_code = EXCLUDED.error_code, finish_reason = EXCLUDED.finish_reason,
    tokens_prompt = EXCLUDED.tokens_prompt, tokens_completion = EXCLUDED.tokens_completion,
    native_tokens_prompt = EXCLUDED.native_tokens_prompt, native_tokens_completion = EXCLUDED.native_tokens_completion,
    latency = EXCLUDED.latency, generation_time = EXCLUDED.generation_time, attempts = EXCLUDED.attempts,
    fallback_used = EXCLUDED.fallback_used, usage_estimated = EXCLUDED.usage_estimated, total_cost = EXCLUDED.total_cost,
    streamed = EXCLUDED.streamed;
  RETURN true;
END
$fn$;
