-- The MCP service's tables. Versioned: never change this file once applied; add 002_*.sql.

-- One row per session ever opened. An ended session keeps its row (ended_at set), so a later call with its id is
-- told apart from one that never existed only in the logs: both answer 404 -32600.
CREATE TABLE sessions (
  id text PRIMARY KEY,                               -- mcp_<id>: the Mcp-Session-Id header, unguessable
  account_id text NOT NULL,                          -- the account that opened it; no other account may use it
  key_id text NOT NULL,                              -- the key that opened it (for the logs; any key of the account may continue)
  protocol_version text NOT NULL,                    -- negotiated at initialize
  client_info jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  delivered_seq bigint NOT NULL DEFAULT 0,           -- the last stream event written to a GET stream
  ended_at timestamptz
);

-- Jobs a session submitted (submit_job), so a job's state events reach that session's stream.
CREATE TABLE session_jobs (
  job_id text PRIMARY KEY,                           -- job_<id>
  session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  account_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Server-initiated messages waiting for (or already sent on) a session's GET stream. Any replica writes them and
-- any replica's stream reads them, so a stream need not live where the event was consumed; seq is the SSE event id.
CREATE TABLE session_events (
  seq bigserial PRIMARY KEY,
  session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  dedupe_key text NOT NULL,                          -- e.g. job:<job_id>:<status>; a redelivered event adds nothing
  message jsonb NOT NULL,                            -- the JSON-RPC notification, as sent
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (session_id, dedupe_key)
);
CREATE INDEX session_events_by_session ON session_events (session_id, seq);
