-- The ledger's tables (migration 001_ledger, with the functions in 001_*_hold*.sql).
--
-- Money is BIGINT nano-USD everywhere: exact integers, never floating point, rounded once when a charge is
-- computed. An account's figures follow MONEY.md:
--   balance   = total_credits - total_usage
--   available = balance - held
-- The functions place_hold, close_hold and expire_holds are the only writers of `held` and `total_usage`.

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
  -- The last line of defence: even a bug in the functions cannot overspend, the write fails instead.
  CONSTRAINT held_not_negative CHECK (held >= 0),
  CONSTRAINT available_not_negative CHECK (total_credits - total_usage - held >= 0)
);

-- Every change to total_credits (grants and corrections): total_credits is their sum, so it can be audited.
CREATE TABLE credit_entries (
  id bigserial PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts(id),
  amount bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- A key's own spend cap: usage (settled) + held (open holds) must stay within spend_limit when one is set.
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

-- A hold leaves 'open' exactly once: to 'settled' or 'released' by close_hold, to 'expired' by expire_holds.
-- `charge` is what was charged when it closed (a late settle on an expired hold may still charge, see close_hold);
-- `closed_at` is set by close_hold only, so an expired hold with closed_at set has taken its late settle.
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
-- One hold per request: a retried internal call finds the hold it already placed instead of holding twice.
CREATE UNIQUE INDEX holds_one_per_request ON holds(account_id, request_id);
-- One running request per Idempotency-Key: two racing requests cannot both insert, the loser gets 409.
CREATE UNIQUE INDEX holds_one_open_per_idempotency_key ON holds(account_id, idempotency_key) WHERE state = 'open' AND idempotency_key IS NOT NULL;
-- The sweeper's scan: only open holds, oldest expiry first.
CREATE INDEX holds_open_by_expiry ON holds(expires_at) WHERE state = 'open';

-- One record per request id (the primary key), written when its hold closes; what /v1/generation answers.
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
