-- Journal records of the embedded in-memory ledger that the tables can never take (ledger/memory/dead-letters.ts):
-- each is kept here, whole, with why, instead of being retried for ever. Its sequence number is consumed in the same
-- transaction (ledger_journal.applied_seq), so the write-behind and the next start's replay carry on past it.
-- Nothing reads these rows but operators (docs/operations.md, "Ledger dead letters") and the ledger's start, which
-- takes back the holds whose later records are still to be skipped (`reloaded_at` unset).
CREATE TABLE ledger_dead_letters (
  seq bigint PRIMARY KEY,
  -- place, close, checkpoint or expire; what the record claims, since a record that cannot be applied may be malformed.
  kind text,
  hold_id text,
  account_id text,
  -- The journal line as it was (JSON text: a jsonb column would refuse what it escapes, such as \u0000).
  record text NOT NULL,
  -- The SQLSTATE the tables answered; none when the record failed before reaching them, or was skipped.
  error_code text,
  error text NOT NULL,
  -- Set when the record was skipped as a later record of a hold whose earlier record is the dead letter `depends_on`.
  depends_on bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- The ledger's position when memory next reloaded from the tables: records of the hold made after it were decided
  -- on what the tables hold, and are applied as any other.
  reloaded_at bigint,
  -- For operators: when and how the dead letter was reconciled.
  resolved_at timestamptz,
  resolution text
);
