import type { Migration } from '@gateway/db';

/**
 * The ledger. Money columns are BIGINT nano-USD. A CHECK keeps `available >= 0` true at the storage level,
 * so even a bug above cannot overspend. Holds are placed and closed by the functions below, each one
 * round trip and one transaction, so the ledger's rules live in one place and hold under concurrency.
 */
export const migrations: Migration[] = [
  {
    id: '001_ledger',
    sql: `
CREATE TABLE accounts (
  id text PRIMARY KEY,
  total_credits bigint NOT NULL DEFAULT 0,
  total_usage bigint NOT NULL DEFAULT 0,
  held bigint NOT NULL DEFAULT 0,
  suspended boolean NOT NULL DEFAULT false,
  rate_limit_requests integer,
  rate_limit_interval text,
  job_concurrency integer,
  webhook_secret text,
  is_demo boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT held_not_negative CHECK (held >= 0),
  CONSTRAINT available_not_negative CHECK (total_credits - total_usage - held >= 0)
);

CREATE TABLE credit_entries (
  id bigserial PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts(id),
  amount bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts(id),
  hash text NOT NULL UNIQUE,
  label text NOT NULL DEFAULT '',
  spend_limit bigint,
  usage bigint NOT NULL DEFAULT 0,
  held bigint NOT NULL DEFAULT 0,
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  CONSTRAINT key_held_not_negative CHECK (held >= 0)
);
CREATE INDEX api_keys_account ON api_keys(account_id);

CREATE TABLE holds (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts(id),
  key_id text NOT NULL REFERENCES api_keys(id),
  request_id text NOT NULL,
  idempotency_key text,
  model text NOT NULL,
  amount bigint NOT NULL CHECK (amount >= 0),
  state text NOT NULL CHECK (state IN ('open', 'settled', 'released', 'expired')),
  charge bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  closed_at timestamptz
);
CREATE UNIQUE INDEX holds_one_per_request ON holds(account_id, request_id);
CREATE UNIQUE INDEX holds_one_open_per_idempotency_key ON holds(account_id, idempotency_key) WHERE state = 'open' AND idempotency_key IS NOT NULL;
CREATE INDEX holds_open_by_expiry ON holds(expires_at) WHERE state = 'open';

CREATE TABLE usage_records (
  request_id text PRIMARY KEY,
  hold_id text UNIQUE REFERENCES holds(id),
  account_id text NOT NULL REFERENCES accounts(id),
  key_id text NOT NULL,
  model text NOT NULL,
  streamed boolean NOT NULL,
  status text NOT NULL,
  error_code text,
  finish_reason text,
  tokens_prompt integer NOT NULL DEFAULT 0,
  tokens_completion integer NOT NULL DEFAULT 0,
  native_tokens_prompt integer NOT NULL DEFAULT 0,
  native_tokens_completion integer NOT NULL DEFAULT 0,
  num_media_prompt integer NOT NULL DEFAULT 0,
  num_media_completion integer NOT NULL DEFAULT 0,
  latency integer NOT NULL DEFAULT 0,
  generation_time integer NOT NULL DEFAULT 0,
  attempts integer NOT NULL DEFAULT 0,
  fallback_used boolean NOT NULL DEFAULT false,
  origin text NOT NULL DEFAULT '',
  total_cost bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_records_account ON usage_records(account_id, created_at);

CREATE TABLE settings (
  name text PRIMARY KEY,
  value text NOT NULL
);

-- Key first, then account, in every function: one lock order, so concurrent holds and settles cannot deadlock.
CREATE FUNCTION place_hold(p_id text, p_account text, p_key text, p_request text, p_idem text, p_model text, p_amount bigint, p_ttl_ms bigint)
RETURNS TABLE (outcome text, hold_id text, amount bigint, expires_at timestamptz, balance bigint, held bigint, key_room bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  h holds%ROWTYPE;
  a accounts%ROWTYPE;
  k api_keys%ROWTYPE;
BEGIN
  SELECT * INTO h FROM holds WHERE holds.account_id = p_account AND holds.request_id = p_request;
  IF FOUND THEN
    RETURN QUERY SELECT 'existing'::text, h.id, h.amount, h.expires_at, NULL::bigint, NULL::bigint, NULL::bigint;
    RETURN;
  END IF;
  IF p_idem IS NOT NULL THEN
    SELECT * INTO h FROM holds WHERE holds.account_id = p_account AND holds.idempotency_key = p_idem AND holds.state = 'open';
    IF FOUND THEN
      RETURN QUERY SELECT 'duplicate'::text, h.id, h.amount, h.expires_at, NULL::bigint, NULL::bigint, NULL::bigint;
      RETURN;
    END IF;
  END IF;

  UPDATE api_keys SET held = api_keys.held + p_amount, last_used_at = now()
   WHERE api_keys.id = p_key AND api_keys.account_id = p_account
     AND (api_keys.spend_limit IS NULL OR api_keys.usage + api_keys.held + p_amount <= api_keys.spend_limit)
  RETURNING * INTO k;
  IF NOT FOUND THEN
    SELECT * INTO k FROM api_keys WHERE api_keys.id = p_key;
    RETURN QUERY SELECT 'key_limit'::text, NULL::text, p_amount, NULL::timestamptz, NULL::bigint, NULL::bigint,
      GREATEST(COALESCE(k.spend_limit, 0) - k.usage - k.held, 0);
    RETURN;
  END IF;

  UPDATE accounts SET held = accounts.held + p_amount
   WHERE accounts.id = p_account AND NOT accounts.suspended
     AND accounts.total_credits - accounts.total_usage - accounts.held >= p_amount
  RETURNING * INTO a;
  IF NOT FOUND THEN
    -- Undo the key's share; the row is still ours until commit, so nobody saw it.
    UPDATE api_keys SET held = api_keys.held - p_amount WHERE api_keys.id = p_key;
    SELECT * INTO a FROM accounts WHERE accounts.id = p_account;
    RETURN QUERY SELECT (CASE WHEN a.suspended THEN 'suspended' ELSE 'insufficient' END)::text, NULL::text, p_amount,
      NULL::timestamptz, a.total_credits - a.total_usage, a.held, NULL::bigint;
    RETURN;
  END IF;

  INSERT INTO holds (id, account_id, key_id, request_id, idempotency_key, model, amount, state, expires_at)
  VALUES (p_id, p_account, p_key, p_request, p_idem, p_model, p_amount, 'open', now() + p_ttl_ms * interval '1 millisecond')
  RETURNING * INTO h;
  RETURN QUERY SELECT 'placed'::text, h.id, h.amount, h.expires_at, NULL::bigint, NULL::bigint, NULL::bigint;
END
$fn$;

-- Closes a hold exactly once. A redelivered event finds it closed and changes nothing.
-- An expired hold can still take a late settle, charged only if the balance and the key's cap still allow it.
CREATE FUNCTION close_hold(p_hold text, p_outcome text, p_charge bigint, r jsonb)
RETURNS TABLE (result text, charged bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  h holds%ROWTYPE;
  c bigint;
BEGIN
  SELECT * INTO h FROM holds WHERE holds.id = p_hold FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'unknown'::text, 0::bigint;
    RETURN;
  END IF;
  IF h.state IN ('settled', 'released') OR (h.state = 'expired' AND h.closed_at IS NOT NULL) THEN
    RETURN QUERY SELECT 'noop'::text, h.charge;
    RETURN;
  END IF;
  c := CASE WHEN p_outcome = 'settle' THEN LEAST(p_charge, h.amount) ELSE 0 END;

  IF h.state = 'open' THEN
    UPDATE api_keys SET held = api_keys.held - h.amount, usage = api_keys.usage + c WHERE api_keys.id = h.key_id;
    UPDATE accounts SET held = accounts.held - h.amount, total_usage = accounts.total_usage + c WHERE accounts.id = h.account_id;
    UPDATE holds SET state = CASE WHEN p_outcome = 'settle' THEN 'settled' ELSE 'released' END, charge = c, closed_at = now() WHERE holds.id = p_hold;
    result := CASE WHEN p_outcome = 'settle' THEN 'settled' ELSE 'released' END;
  ELSE
    IF c > 0 THEN
      UPDATE api_keys SET usage = api_keys.usage + c
       WHERE api_keys.id = h.key_id AND (api_keys.spend_limit IS NULL OR api_keys.usage + api_keys.held + c <= api_keys.spend_limit);
      IF FOUND THEN
        UPDATE accounts SET total_usage = accounts.total_usage + c
         WHERE accounts.id = h.account_id AND accounts.total_credits - accounts.total_usage - accounts.held >= c;
        IF NOT FOUND THEN
          UPDATE api_keys SET usage = api_keys.usage - c WHERE api_keys.id = h.key_id;
          c := 0;
        END IF;
      ELSE
        c := 0;
      END IF;
    END IF;
    UPDATE holds SET charge = c, closed_at = now() WHERE holds.id = p_hold;
    result := CASE WHEN c > 0 THEN 'late_charged' ELSE 'late_dropped' END;
  END IF;

  INSERT INTO usage_records (request_id, hold_id, account_id, key_id, model, streamed, status, error_code, finish_reason,
    tokens_prompt, tokens_completion, native_tokens_prompt, native_tokens_completion, num_media_prompt, num_media_completion,
    latency, generation_time, attempts, fallback_used, origin, total_cost, created_at)
  VALUES (h.request_id, h.id, h.account_id, h.key_id, r->>'model', (r->>'streamed')::boolean, r->>'status', r->>'error_code',
    r->>'finish_reason', (r->>'tokens_prompt')::int, (r->>'tokens_completion')::int, (r->>'native_tokens_prompt')::int,
    (r->>'native_tokens_completion')::int, COALESCE((r->>'num_media_prompt')::int, 0), COALESCE((r->>'num_media_completion')::int, 0),
    (r->>'latency')::int, (r->>'generation_time')::int, (r->>'attempts')::int, (r->>'fallback_used')::boolean,
    COALESCE(r->>'origin', ''), c, h.created_at)
  ON CONFLICT (request_id) DO UPDATE SET
    status = EXCLUDED.status, error_code = EXCLUDED.error_code, finish_reason = EXCLUDED.finish_reason,
    tokens_prompt = EXCLUDED.tokens_prompt, tokens_completion = EXCLUDED.tokens_completion,
    native_tokens_prompt = EXCLUDED.native_tokens_prompt, native_tokens_completion = EXCLUDED.native_tokens_completion,
    latency = EXCLUDED.latency, generation_time = EXCLUDED.generation_time, attempts = EXCLUDED.attempts,
    fallback_used = EXCLUDED.fallback_used, total_cost = EXCLUDED.total_cost, streamed = EXCLUDED.streamed;
  charged := c;
  RETURN NEXT;
END
$fn$;

-- Releases every open hold past its expiry; the caller's request is gone, so its usage record says so.
CREATE FUNCTION expire_holds(p_limit integer)
RETURNS integer
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  h holds%ROWTYPE;
  n integer := 0;
BEGIN
  FOR h IN SELECT * FROM holds WHERE state = 'open' AND holds.expires_at < now() ORDER BY holds.expires_at LIMIT p_limit FOR UPDATE SKIP LOCKED LOOP
    UPDATE api_keys SET held = api_keys.held - h.amount WHERE api_keys.id = h.key_id;
    UPDATE accounts SET held = accounts.held - h.amount WHERE accounts.id = h.account_id;
    UPDATE holds SET state = 'expired', charge = 0 WHERE holds.id = h.id;
    INSERT INTO usage_records (request_id, hold_id, account_id, key_id, model, streamed, status, error_code, total_cost, created_at)
    VALUES (h.request_id, h.id, h.account_id, h.key_id, h.model, false, 'failed', 'hold_expired', 0, h.created_at)
    ON CONFLICT (request_id) DO NOTHING;
    n := n + 1;
  END LOOP;
  RETURN n;
END
$fn$;
`,
  },
];
