-- checkpoint_hold: keeps the highest checkpoint of an open hold (a redelivered or overtaken lower one changes
-- nothing). A checkpoint for a hold that has closed, expired or does not exist is dropped: its close already says
-- what was charged. True when the checkpoint was kept.
CREATE OR REPLACE FUNCTION checkpoint_hold(p_hold text, p_charge bigint, r jsonb)
RETURNS boolean
LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO hold_checkpoints (hold_id, charge, record)
  SELECT h.id, p_charge, r FROM holds h WHERE h.id = p_hold AND h.state = 'open'
  ON CONFLICT (hold_id) DO UPDATE SET charge = EXCLUDED.charge, record = EXCLUDED.record, updated_at = now()
   WHERE hold_checkpoints.charge <= EXCLUDED.charge;
  RETURN FOUND;
END
$fn$;
