-- When each model id first appeared in the config of a catalogue process: the catalogue's `addedAt` for a model
-- whose config gives no `added_at`. Written once per id (the first process to see it wins; every later start and
-- every other replica keeps that row), so the figure survives restarts and is the same on every replica.
CREATE TABLE model_first_seen (
  model_id text PRIMARY KEY,
  first_seen_at timestamptz NOT NULL
);
