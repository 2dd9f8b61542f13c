-- The two tables every paid call writes keep their references by construction, not by foreign-key triggers
-- (docs/decisions/009-ledger-hot-tables-without-foreign-keys.md): each hold and each usage record is written by a
-- ledger function that has just locked the key's and the account's rows it names (the record: its hold's row), and
-- nothing deletes an account, a key or a hold. The triggers checked that again, per row: about 140 µs of a lone
-- hold's statement and half of the database's time per request under load. The other references stay.
ALTER TABLE holds DROP CONSTRAINT IF EXISTS holds_account_id_fkey;
ALTER TABLE holds DROP CONSTRAINT IF EXISTS holds_key_id_fkey;
ALTER TABLE usage_records DROP CONSTRAINT IF EXISTS usage_records_hold_id_fkey;
ALTER TABLE usage_records DROP CONSTRAINT IF EXISTS usage_records_account_id_fkey;
