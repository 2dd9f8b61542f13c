-- References to generated media that /v1/files/{id} streams. The gateway hands out its own ids and URLs, never an
-- upstream's address: a reference either points at the origin (fetched at request time) or at bytes the gateway
-- stored itself (upstreams that answer inline). Each belongs to one account and expires.
CREATE TABLE file_refs (
  id text PRIMARY KEY,
  account_id text NOT NULL,
  -- 'origin': `location` is the upstream's URL; 'stored': `location` is a key in the media storage.
  source text NOT NULL CHECK (source IN ('origin', 'stored')),
  location text NOT NULL,
  content_type text NOT NULL,
  request_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX file_refs_expiry ON file_refs (expires_at);
