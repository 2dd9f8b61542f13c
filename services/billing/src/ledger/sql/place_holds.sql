-- place_holds: place_hold for a batch of one key's holds, in the batch's order, in one statement (holds.ts
-- batches a busy key's concurrent holds). Each item gets exactly the outcome place_hold would give it, called
-- after the items before it.
--
-- Why not place_hold once per item: each call updates the key's row and the account's row, so a batch of n wrote
-- 2n versions of the same two rows, each update walking the versions before it, while every other hold and close
-- of that key waited on those rows. Here the two rows are locked once (key first, then account: the lock order of
-- every ledger function), the money checks run on their running figures, and each row is written once at the end.
-- A batch whose items do not all name one key of one account is left to place_hold, item by item.
CREATE OR REPLACE FUNCTION place_holds(p jsonb)
RETURNS TABLE (i int, outcome text, hold_id text, amount bigint, expires_at timestamptz, balance bigint, held bigint, key_room bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  b record;
  h holds%ROWTYPE;
  a accounts%ROWTYPE;
  k api_keys%ROWTYPE;
  v_key text := p->0->>'key';
  v_account text := p->0->>'account';
  key_held bigint;
  acct_held bigint;
  key_used boolean := false;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM jsonb_to_recordset(p) AS x(key text, account text) WHERE x.key IS DISTINCT FROM v_key OR x.account IS DISTINCT FROM v_account) THEN
    -- FOR NO KEY UPDATE, the lock place_hold's UPDATEs take: a row that another transaction's new hold or usage
    -- record references (a foreign-key check, FOR KEY SHARE) is not held up by it.
    SELECT * INTO k FROM api_keys WHERE api_keys.id = v_key AND api_keys.account_id = v_account FOR NO KEY UPDATE;
  END IF;
  IF k.id IS NULL THEN
    RETURN QUERY SELECT x.i, r.* FROM jsonb_to_recordset(p) AS x(i int, id text, account text, key text, request text, idem text, model text, amount bigint, ttl bigint)
      CROSS JOIN LATERAL place_hold(x.id, x.account, x.key, x.request, x.idem, x.model, x.amount, x.ttl) r ORDER BY x.i;
    RETURN;
  END IF;
  SELECT * INTO a FROM accounts WHERE accounts.id = v_account FOR NO KEY UPDATE;
  key_held := k.held;
  acct_held := a.held;

  FOR b IN SELECT * FROM jsonb_to_recordset(p) AS x(i int, id text, request text, idem text, model text, amount bigint, ttl bigint) ORDER BY x.i LOOP
    -- The same checks as place_hold, in its order; an earlier item's hold is already a row here.
    SELECT * INTO h FROM holds WHERE holds.account_id = v_account AND holds.request_id = b.request;
    IF FOUND THEN
      RETURN QUERY SELECT b.i, CASE WHEN h.state = 'open' THEN 'existing' ELSE 'finished' END::text, h.id, h.amount, h.expires_at,
        NULL::bigint, NULL::bigint, NULL::bigint;
      CONTINUE;
    END IF;
    IF b.idem IS NOT NULL THEN
      SELECT * INTO h FROM holds WHERE holds.account_id = v_account AND holds.idempotency_key = b.idem AND holds.state = 'open';
      IF FOUND THEN
        RETURN QUERY SELECT b.i, 'duplicate'::text, h.id, h.amount, h.expires_at, NULL::bigint, NULL::bigint, NULL::bigint;
        CONTINUE;
      END IF;
    END IF;
    IF k.spend_limit IS NOT NULL AND k.usage + key_held + b.amount > k.spend_limit THEN
      RETURN QUERY SELECT b.i, 'key_limit'::text, NULL::text, b.amount, NULL::timestamptz, NULL::bigint, NULL::bigint,
        GREATEST(k.spend_limit - k.usage - key_held, 0);
      CONTINUE;
    END IF;
    -- place_hold marks the key used once its cap passed, even when the account then refuses.
    key_used := true;
    IF a.suspended OR a.total_credits - a.total_usage - acct_held < b.amount THEN
      RETURN QUERY SELECT b.i, (CASE WHEN a.suspended THEN 'suspended' ELSE 'insufficient' END)::text, NULL::text, b.amount,
        NULL::timestamptz, a.total_credits - a.total_usage, acct_held, NULL::bigint;
      CONTINUE;
    END IF;
    INSERT INTO holds (id, account_id, key_id, request_id, idempotency_key, model, amount, state, expires_at)
    VALUES (b.id, v_account, v_key, b.request, b.idem, b.model, b.amount, 'open', now() + b.ttl * interval '1 millisecond')
    RETURNING * INTO h;
    key_held := key_held + b.amount;
    acct_held := acct_held + b.amount;
    RETURN QUERY SELECT b.i, 'placed'::text, h.id, h.amount, h.expires_at, NULL::bigint, NULL::bigint, NULL::bigint;
  END LOOP;

  IF key_used THEN
    UPDATE api_keys SET held = key_held, last_used_at = now() WHERE api_keys.id = v_key;
  END IF;
  IF acct_held <> a.held THEN
    UPDATE accounts SET held = acct_held WHERE accounts.id = v_account;
  END IF;
END
$fn$;
