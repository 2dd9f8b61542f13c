-- The catalogue's own tables: the facts behind GET /v1/stats (from billing's events; no other service's tables are
-- read) and the status monitor's samples and daily roll-ups behind GET /v1/status.

-- Events already applied, for the consumers whose effect is not idempotent by itself (adding tokens). Pruned after
-- a week: redelivery happens within minutes.
CREATE TABLE seen_events (
  id text PRIMARY KEY,
  seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX seen_events_age ON seen_events (seen_at);

-- One row per account billing announced (account.opened.v1); announcing again changes nothing.
CREATE TABLE stats_accounts (
  account_id text PRIMARY KEY,
  opened_at timestamptz NOT NULL
);

-- Input plus output tokens of recorded usage, summed per UTC day of the request's end. Only the trailing window is
-- ever read, so older days are pruned.
CREATE TABLE stats_token_days (
  day date PRIMARY KEY,
  tokens bigint NOT NULL CHECK (tokens >= 0)
);

-- The newest endpoint.health.v1 row per reporting process and endpoint: every catalogue replica reads them here,
-- whichever replica the bus handed the event to.
CREATE TABLE endpoint_reports (
  source text NOT NULL,
  endpoint text NOT NULL,
  provider text NOT NULL,
  window_end timestamptz NOT NULL,
  attempts integer NOT NULL,
  failures integer NOT NULL,
  latency_ms integer,
  circuit text NOT NULL CHECK (circuit IN ('closed', 'open', 'half_open')),
  PRIMARY KEY (source, endpoint)
);

-- One measurement of one component per sampling slot (time / interval): replicas sampling the same slot keep one.
CREATE TABLE status_samples (
  component text NOT NULL,
  slot bigint NOT NULL,
  at timestamptz NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('ok', 'degraded', 'down')),
  latency_ms integer NOT NULL,
  PRIMARY KEY (component, slot)
);
CREATE INDEX status_samples_age ON status_samples (at);

-- The daily roll-up, written in the same transaction as each sample; kept for the 90-day window.
CREATE TABLE status_days (
  component text NOT NULL,
  day date NOT NULL,
  samples integer NOT NULL,
  ok integer NOT NULL,
  degraded integer NOT NULL,
  down integer NOT NULL,
  PRIMARY KEY (component, day)
);
