-- expire_holds: the sweeper (MONEY.md invariant 2: no hold stays open past its expiry plus the sweep interval).
-- A hold nobody closed (the close event was never published, or the process died mid-request) gives its
-- amount back to the key and the account; the caller's request is gone, so its usage record says hold_expired.
-- A settle that arrives later is handled by close_hold's late path.
--
-- SKIP LOCKED: several billing replicas sweep at once without waiting on each other, and a hold whose close is
-- running right now (row locked by close_hold) is left to that close. p_limit bounds one sweep's transaction.
CREATE OR REPLACE FUNCTION expire_holds(p_limit integer)
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
    -- closed_at stays NULL: the hold can still take one late settle (close_hold).
    UPDATE holds SET state = 'expired', charge = 0 WHERE holds.id = h.id;
    INSERT INTO usage_records (request_id, hold_id, account_id, key_id, model, streamed, status, error_code, total_cost, created_at)
    VALUES (h.request_id, h.id, h.account_id, h.key_id, h.model, false, 'failed', 'hold_expired', 0, h.created_at)
    ON CONFLICT (request_id) DO NOTHING;
    n := n + 1;
  END LOOP;
  RETURN n;
END
$fn$;
