-- expire_hold: one open hold gives its amount back to its key and account, whatever its expiry says (the callers
-- chose it: the sweep below by time, the embedded gateway's start because its dead predecessor left it). Its charge
-- is 0 and closed_at stays NULL, so it can still take one late settle (close_hold). False when it was not open.
CREATE OR REPLACE FUNCTION expire_hold(p_hold text)
RETURNS boolean
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  h holds%ROWTYPE;
BEGIN
  SELECT * INTO h FROM holds WHERE holds.id = p_hold AND state = 'open' FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  UPDATE api_keys SET held = api_keys.held - h.amount WHERE api_keys.id = h.key_id;
  UPDATE accounts SET held = accounts.held - h.amount WHERE accounts.id = h.account_id;
  UPDATE holds SET state = 'expired', charge = 0 WHERE holds.id = h.id;
  INSERT INTO usage_records (request_id, hold_id, account_id, key_id, model, streamed, status, error_code, total_cost, created_at)
  VALUES (h.request_id, h.id, h.account_id, h.key_id, h.model, false, 'failed', 'hold_expired', 0, h.created_at)
  ON CONFLICT (request_id) DO NOTHING;
  RETURN true;
END
$fn$;

-- expire_these: expires those of the given holds that are still open, then charges each one's last checkpoint if it
-- has one: a stream whose process stopped closing it (killed mid-stream) is charged what it had delivered, as the
-- late settle it is, only if that still fits, with its record saying what was delivered. Every amount goes back
-- before any checkpoint is charged, as the embedded ledger's sweep does (ledger/memory/memory-ledger.ts): the two
-- ledgers charge the same checkpoints even when a balance or a key's room was already short. Returns the ids it
-- expired, in the order given.
CREATE OR REPLACE FUNCTION expire_these(p_holds text[])
RETURNS SETOF text
LANGUAGE plpgsql AS $fn$
DECLARE
  expired text[] := '{}';
  hold text;
  c hold_checkpoints%ROWTYPE;
BEGIN
  FOREACH hold IN ARRAY COALESCE(p_holds, '{}') LOOP
    IF expire_hold(hold) THEN
      expired := expired || hold;
    END IF;
  END LOOP;
  FOREACH hold IN ARRAY expired LOOP
    SELECT * INTO c FROM hold_checkpoints WHERE hold_checkpoints.hold_id = hold;
    IF FOUND THEN
      PERFORM * FROM close_hold(hold, 'settle', c.charge, c.record);
    END IF;
    RETURN NEXT hold;
  END LOOP;
END
$fn$;

-- sweep_holds, expire_holds: the sweeper (MONEY.md invariant 2: no hold stays open past its expiry plus the sweep interval).
-- A hold nobody closed (the close event was never published, or the process died mid-request) gives its
-- amount back to the key and the account; the caller's request is gone, so its usage record says hold_expired.
-- A settle that arrives later is handled by close_hold's late path.
--
-- SKIP LOCKED: several billing replicas sweep at once without waiting on each other, and a hold whose close is
-- running right now (row locked by close_hold) is left to that close. p_limit bounds one sweep's transaction.
-- NO KEY UPDATE, not UPDATE: a checkpoint being written takes its hold's row FOR KEY SHARE (the foreign key of
-- hold_checkpoints), which FOR UPDATE conflicts with, so a stream checkpointing as the sweep ran was skipped and
-- stayed open past its expiry until the next sweep (found by the ledger properties). The sweep changes no key.
--
-- sweep_holds returns the ids it expired (the sweeper announces the checkpoints it charged: publish.ts);
-- expire_holds, the count, is the same sweep for callers that only count.
CREATE OR REPLACE FUNCTION sweep_holds(p_limit integer)
RETURNS SETOF text
LANGUAGE plpgsql AS $fn$
DECLARE
  due text[];
BEGIN
  SELECT array_agg(id) INTO due FROM (
    SELECT id FROM holds WHERE state = 'open' AND holds.expires_at < now() ORDER BY holds.expires_at LIMIT p_limit FOR NO KEY UPDATE SKIP LOCKED
  ) d;
  -- Checkpoints of holds that closed are spent.
  DELETE FROM hold_checkpoints c USING holds h WHERE h.id = c.hold_id AND h.state <> 'open';
  IF due IS NULL THEN
    RETURN;
  END IF;
  -- Every key row, then every account row, each in id order, before any change: holds of two keys of one account
  -- taken hold by hold (key, account, key...) would hold the account while waiting for the second key, which a
  -- place_hold or close_hold on that key holds while it waits for the account (a deadlock PostgreSQL breaks by
  -- aborting one side). A hold and a close take one key and then one account, so this order never crosses theirs.
  PERFORM 1 FROM api_keys WHERE id IN (SELECT key_id FROM holds WHERE holds.id = ANY(due)) ORDER BY id FOR UPDATE;
  PERFORM 1 FROM accounts WHERE id IN (SELECT account_id FROM holds WHERE holds.id = ANY(due)) ORDER BY id FOR UPDATE;
  RETURN QUERY SELECT * FROM expire_these(due);
END
$fn$;

CREATE OR REPLACE FUNCTION expire_holds(p_limit integer)
RETURNS integer
LANGUAGE sql AS $fn$
  SELECT count(*)::int FROM sweep_holds(p_limit);
$fn$;
