-- The jobs service's tables. Versioned: never change this file once applied; add 002_*.sql.

CREATE TABLE jobs (
  id text PRIMARY KEY,                               -- job_<id>
  account_id text NOT NULL,
  key_id text NOT NULL,
  model text NOT NULL,
  category text NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
  input jsonb NOT NULL,                              -- the model's own input, as passed upstream
  n integer NOT NULL,
  duration_seconds numeric NOT NULL,                 -- what the hold was sized on
  webhook_url text,
  idempotency_key text,
  gateway_request_id text NOT NULL,                  -- req_<id> of the submit: the usage record
  hold jsonb NOT NULL,                               -- the HoldRecord (JSON form): any worker can close it
  endpoint_key text,                                 -- provider/model of the endpoint that took the job
  ticket jsonb,                                      -- the upstream's handle, once submitted
  logs jsonb NOT NULL DEFAULT '[]'::jsonb,
  inference_time double precision,                   -- seconds, as the upstream reported
  payload jsonb,                                     -- the result, media URLs rewritten to /v1/files
  video_file_id text,                                -- the first video of the result, for /v1/videos/{id}/content
  usage jsonb,                                       -- e.g. {"video_seconds": "5"}
  charge_nano numeric,                               -- the charge the worker settled at (cost waits for billing)
  cost_nano numeric,                                 -- billing's applied charge: the job list's cost; null until then
  error jsonb,                                       -- {code, message, status} when the job did not succeed
  -- Milliseconds, as JavaScript's Date holds them: the list's keyset cursor round-trips through one exactly.
  created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  started_at timestamptz,
  completed_at timestamptz,
  next_poll_at timestamptz NOT NULL DEFAULT now(),
  polls integer NOT NULL DEFAULT 0,
  lease_owner text,
  lease_until timestamptz,
  UNIQUE (account_id, idempotency_key)
);
CREATE INDEX jobs_by_account ON jobs (account_id, created_at DESC, id DESC);
CREATE INDEX jobs_due ON jobs (next_poll_at) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_queued_by_model ON jobs (model, created_at, id) WHERE status = 'queued';
CREATE INDEX jobs_by_request ON jobs (gateway_request_id);

-- One delivery per terminal state of a job that named a webhook_url; written in the transaction that ended the job.
CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,                               -- whd_<id>: X-Gateway-Webhook-Id, the same on every retry
  job_id text NOT NULL REFERENCES jobs (id),
  account_id text NOT NULL,
  url text NOT NULL,
  body text NOT NULL,                                -- the exact bytes every attempt sends (and signs)
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  lease_owner text,
  lease_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_by_job ON webhook_deliveries (job_id);

-- Every attempt, answered or not.
CREATE TABLE webhook_attempts (
  delivery_id text NOT NULL REFERENCES webhook_deliveries (id),
  attempt integer NOT NULL,                          -- 1 is the first send
  sent_at timestamptz NOT NULL,
  signed_timestamp bigint NOT NULL,                  -- the X-Gateway-Webhook-Timestamp this attempt carried
  status_code integer,                               -- null when no answer came
  error text,                                        -- why it failed: refused address, timeout, non-2xx
  duration_ms integer NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);

-- Events waiting for the relay: written with the state change that caused them, published after, deleted once out.
CREATE TABLE outbox (
  seq bigserial PRIMARY KEY,
  topic text NOT NULL,
  event jsonb NOT NULL,                              -- a BusEvent
  created_at timestamptz NOT NULL DEFAULT now()
);
