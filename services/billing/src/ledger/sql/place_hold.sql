-- place_hold: reserve the worst case before a request runs (MONEY.md "Place a hold").
--
-- One round trip, one transaction, one conditional write per row: the money checks sit in the UPDATEs' WHERE
-- clauses, so no interleaving of concurrent holds can pass a check that a committed neighbour already used up.
-- Lock order is key row first, then account row, in every ledger function: concurrent holds and settles
-- cannot deadlock.
--
-- Outcomes (holds.ts turns them into a Hold or the spec's refusal):
--   placed       the hold is open; key and account each carry `amount` more in `held`
--   existing     this request id already has an open hold (a retried internal call): that hold, nothing held again
--   finished     this request id's hold has already closed: 409, nothing held (a replay must not run on a closed hold)
--   duplicate    another open hold carries this Idempotency-Key: 409, nothing held
--   key_limit    the key's cap cannot cover it: 402, key_room says what is left on the key
--   insufficient available < amount: 402, with balance and held to name in the message
--   suspended    the account may not spend: 402
CREATE OR REPLACE FUNCTION place_hold(p_id text, p_account text, p_key text, p_request text, p_idem text, p_model text, p_amount bigint, p_ttl_ms bigint)
RETURNS TABLE (outcome text, hold_id text, amount bigint, expires_at timestamptz, balance bigint, held bigint, key_room bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  h holds%ROWTYPE;
  a accounts%ROWTYPE;
  k api_keys%ROWTYPE;
BEGIN
  -- Idempotent on the request id while its hold is open. Once it has closed, handing it back would let the request
  -- run with nothing reserved and a settle that applies to nothing: refuse instead.
  SELECT * INTO h FROM holds WHERE holds.account_id = p_account AND holds.request_id = p_request;
  IF FOUND THEN
    RETURN QUERY SELECT CASE WHEN h.state = 'open' THEN 'existing' ELSE 'finished' END::text, h.id, h.amount, h.expires_at,
      NULL::bigint, NULL::bigint, NULL::bigint;
    RETURN;
  END IF;
  -- A finished request frees its Idempotency-Key: only an open hold makes a duplicate. Two racing first requests
  -- both pass this check; the partial unique index on holds lets only one of them insert.
  IF p_idem IS NOT NULL THEN
    SELECT * INTO h FROM holds WHERE holds.account_id = p_account AND holds.idempotency_key = p_idem AND holds.state = 'open';
    IF FOUND THEN
      RETURN QUERY SELECT 'duplicate'::text, h.id, h.amount, h.expires_at, NULL::bigint, NULL::bigint, NULL::bigint;
      RETURN;
    END IF;
  END IF;

  -- The key's cap: settled usage + open holds + this hold <= spend_limit (no limit: always fits).
  UPDATE api_keys SET held = api_keys.held + p_amount, last_used_at = now()
   WHERE api_keys.id = p_key AND api_keys.account_id = p_account
     AND (api_keys.spend_limit IS NULL OR api_keys.usage + api_keys.held + p_amount <= api_keys.spend_limit)
  RETURNING * INTO k;
  IF NOT FOUND THEN
    SELECT * INTO k FROM api_keys WHERE api_keys.id = p_key;
    RETURN QUERY SELECT 'key_limit'::text, NULL::text, p_amount, NULL::timestamptz, NULL::bigint, NULL::bigint,
      GREATEST(COALESCE(k.spend_limit, 0) - k.usage - k.held, 0);
    RETURN;
  END IF;

  -- The account: available >= amount, and not suspended.
  UPDATE accounts SET held = accounts.held + p_amount
   WHERE accounts.id = p_account AND NOT accounts.suspended
     AND accounts.total_credits - accounts.total_usage - accounts.held >= p_amount
  RETURNING * INTO a;
  IF NOT FOUND THEN
    -- Undo the key's share; the row is still ours until commit, so nobody saw it.
    UPDATE api_keys SET held = api_keys.held - p_amount WHERE api_keys.id = p_key;
    SELECT * INTO a FROM accounts WHERE accounts.id = p_account;
    RETURN QUERY SELECT (CASE WHEN a.suspended THEN 'suspended' ELSE 'insufficient' END)::text, NULL::text, p_amount,
      NULL::timestamptz, a.total_credits - a.total_usage, a.held, NULL::bigint;
    RETURN;
  END IF;

  -- The expiry is the sweeper's deadline: a hold nobody closes is released then (expire_holds).
  INSERT INTO holds (id, account_id, key_id, request_id, idempotency_key, model, amount, state, expires_at)
  VALUES (p_id, p_account, p_key, p_request, p_idem, p_model, p_amount, 'open', now() + p_ttl_ms * interval '1 millisecond')
  RETURNING * INTO h;
  RETURN QUERY SELECT 'placed'::text, h.id, h.amount, h.expires_at, NULL::bigint, NULL::bigint, NULL::bigint;
END
$fn$;
