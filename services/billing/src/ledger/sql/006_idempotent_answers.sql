-- Keyed synchronous calls (Idempotency-Key), so a retry of a finished call is answered from here instead of running,
-- and paying, again (services/billing/src/replays). A row is claimed before the hold, finished with the answer the
-- client got (or without one: a stream, an oversized answer), dropped when the call failed, and swept once expired.
CREATE TABLE idempotent_answers (
  account_id text NOT NULL,
  idempotency_key text NOT NULL,
  fingerprint text NOT NULL,                          -- sha256 of route and canonical body: another request is refused
  request_id text NOT NULL,                           -- req_<id> of the call that claimed it, then of the one that answered
  state text NOT NULL CHECK (state IN ('running', 'answered', 'finished')),
  lease_until timestamptz NOT NULL,                   -- a running claim past this died unrecorded: a retry takes it over
  streamed boolean NOT NULL DEFAULT false,
  status integer,
  headers jsonb,
  body text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (account_id, idempotency_key)
);
CREATE INDEX idempotent_answers_expiry ON idempotent_answers (expires_at);
