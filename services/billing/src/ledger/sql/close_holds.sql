-- close_holds: close_hold for a batch of closes, in the batch's order, in one statement (holds.ts batches a busy
-- key's closes). Each item gets exactly the result close_hold would give it, called after the items before it; a
-- hold named twice is closed by the first and a no-op for the second.
--
-- Why not close_hold once per item: as in place_holds, each call wrote the key's row and the account's row again.
-- Lock order, as the sweeper's: every hold of the batch first, in id order, then the key, then the account. When
-- the batch's holds belong to more than one key, each item goes to close_hold (after the same hold locks).
CREATE OR REPLACE FUNCTION close_holds(p jsonb)
RETURNS TABLE (i int, result text, charged bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  b record;
  h holds%ROWTYPE;
  k api_keys%ROWTYPE;
  a accounts%ROWTYPE;
  ids text[] := ARRAY(SELECT x.hold FROM jsonb_to_recordset(p) AS x(hold text));
  owners int;
  v_key text;
  v_account text;
  key_held bigint;
  key_usage bigint;
  acct_held bigint;
  acct_usage bigint;
  c bigint;
  res text;
BEGIN
  -- Planned at every call (EXECUTE), for the array it is given: a plan PL/pgSQL cached while the table was small
  -- scans every hold, and the table only grows.
  EXECUTE 'SELECT count(DISTINCT (l.key_id, l.account_id)), min(l.key_id), min(l.account_id)
             FROM (SELECT key_id, account_id FROM holds WHERE id = ANY($1) ORDER BY id FOR UPDATE) l'
    INTO owners, v_key, v_account USING ids;
  IF owners <> 1 THEN
    RETURN QUERY SELECT x.i, r.* FROM jsonb_to_recordset(p) AS x(i int, hold text, outcome text, charge bigint, rec jsonb)
      CROSS JOIN LATERAL close_hold(x.hold, x.outcome, x.charge, x.rec) r ORDER BY x.i;
    RETURN;
  END IF;
  -- The lock close_hold's UPDATEs take (see place_holds).
  SELECT * INTO k FROM api_keys WHERE api_keys.id = v_key FOR NO KEY UPDATE;
  SELECT * INTO a FROM accounts WHERE accounts.id = v_account FOR NO KEY UPDATE;
  key_held := k.held;
  key_usage := k.usage;
  acct_held := a.held;
  acct_usage := a.total_usage;

  FOR b IN SELECT * FROM jsonb_to_recordset(p) AS x(i int, hold text, outcome text, charge bigint, rec jsonb) ORDER BY x.i LOOP
    -- close_hold's rules, on the running figures of the key and the account.
    SELECT * INTO h FROM holds WHERE holds.id = b.hold;
    IF NOT FOUND THEN
      RETURN QUERY SELECT b.i, 'unknown'::text, 0::bigint;
      CONTINUE;
    END IF;
    IF h.state IN ('settled', 'released') OR (h.state = 'expired' AND h.closed_at IS NOT NULL) THEN
      RETURN QUERY SELECT b.i, 'noop'::text, h.charge;
      CONTINUE;
    END IF;
    c := CASE WHEN b.outcome = 'settle' THEN LEAST(b.charge, h.amount) ELSE 0 END;
    IF h.state = 'open' THEN
      key_held := key_held - h.amount;
      key_usage := key_usage + c;
      acct_held := acct_held - h.amount;
      acct_usage := acct_usage + c;
      UPDATE holds SET state = CASE WHEN b.outcome = 'settle' THEN 'settled' ELSE 'released' END, charge = c, closed_at = now()
       WHERE holds.id = b.hold;
      res := CASE WHEN b.outcome = 'settle' THEN 'settled' ELSE 'released' END;
    ELSE
      -- Expired: taken only if it still fits, the key's cap first, then the account's available balance.
      IF c > 0 AND (k.spend_limit IS NULL OR key_usage + key_held + c <= k.spend_limit)
         AND a.total_credits - acct_usage - acct_held >= c THEN
        key_usage := key_usage + c;
        acct_usage := acct_usage + c;
      ELSE
        c := 0;
      END IF;
      UPDATE holds SET charge = c, closed_at = now() WHERE holds.id = b.hold;
      res := CASE WHEN c > 0 THEN 'late_charged' ELSE 'late_dropped' END;
    END IF;
    PERFORM write_usage_record(h, b.rec, c);
    RETURN QUERY SELECT b.i, res, c;
  END LOOP;

  IF key_held <> k.held OR key_usage <> k.usage THEN
    UPDATE api_keys SET held = key_held, usage = key_usage WHERE api_keys.id = v_key;
  END IF;
  IF acct_held <> a.held OR acct_usage <> a.total_usage THEN
    UPDATE accounts SET held = acct_held, total_usage = acct_usage WHERE accounts.id = v_account;
  END IF;
END
$fn$;
