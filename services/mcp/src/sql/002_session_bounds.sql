-- Bounds on what sessions keep (issue 31, item 6). Versioned: never change this file once applied; add 003_*.sql.

-- The lowest MCP log level (RFC 5424 rank: 0 debug .. 7 emergency) the session asked for with logging/setLevel;
-- a notification below it is never queued. 0 sends everything, as before the client sets a level.
ALTER TABLE sessions ADD COLUMN log_rank smallint NOT NULL DEFAULT 0;

-- Counting an account's live sessions (the per-account cap) and finding idle ones (the sweep) without a full scan.
CREATE INDEX sessions_by_account ON sessions (account_id, last_seen_at);
CREATE INDEX sessions_by_last_seen ON sessions (last_seen_at);
