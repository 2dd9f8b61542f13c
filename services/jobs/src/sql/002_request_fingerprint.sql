-- The request an Idempotency-Key was first sent with (requestFingerprint of route and body): a submit that reuses
-- the key with another request is refused instead of silently answered with the first job. Null on older rows.
ALTER TABLE jobs ADD COLUMN request_fingerprint text;
