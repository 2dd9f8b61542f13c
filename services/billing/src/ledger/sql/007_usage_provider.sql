-- Migration 007_usage_provider: which provider served a request (the id of the answering endpoint's provider in the
-- config), for the generation record. Records before it, and requests no endpoint answered, have none.
ALTER TABLE usage_records ADD COLUMN provider text;
