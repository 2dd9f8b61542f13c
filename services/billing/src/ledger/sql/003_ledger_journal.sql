-- The embedded in-memory ledger's write-behind position (ledger/memory/): every journal record up to applied_seq
-- is in the tables. ledger_write moves it in the transaction that applies a batch, so replaying the journal after
-- a crash applies each decision exactly once. One row; unused (0) by the fleet's SQL ledger.
CREATE TABLE ledger_journal (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  applied_seq bigint NOT NULL DEFAULT 0
);
INSERT INTO ledger_journal DEFAULT VALUES;
