-- A streaming hold's latest checkpoint (hold.checkpoint.v1): what its stream had delivered so far, as the partial
-- settle that would charge it. Kept only while the hold is open (checkpoint_hold); expire_hold applies it as a late
-- settle, so a process killed mid-stream still charges what it delivered up to its last checkpoint. The sweeper
-- deletes the rows of holds that have closed.
CREATE TABLE hold_checkpoints (
  hold_id text PRIMARY KEY REFERENCES holds(id),
  charge bigint NOT NULL CHECK (charge >= 0),
  record jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
