-- checkpoint_hold: keeps the highest checkpoint of an open hold (a redelivered or overtaken lower one changes
-- nothing). A checkpoint for a hold that has closed, expired or does not exist is dropped: its close already says
-- what was charged. True when the checkpoint was kept.
--
-- It takes no lock on the hold, so a sweep expiring the hold is never made to skip it (expire_holds.sql). The
-- price: a checkpoint racing that sweep can answer true though the sweep read and charged the checkpoint before
-- it. The money is then what it would be had the sweep come first (this one dropped); only the answer differs,
-- which no caller reads, and the row it wrote outlives the hold until the next sweep deletes it.
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
