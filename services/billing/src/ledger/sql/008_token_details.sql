-- Migration 007_token_details: of a text record's prompt tokens, those read from the upstream's prompt cache; of its
-- completion tokens, the reasoning; and what the cache rates changed against the prompt rate (nano-USD, negative
-- when cache writes cost more than they saved). Records written before it had no cache pricing, hence the zeros.
ALTER TABLE usage_records ADD COLUMN tokens_cached integer NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN tokens_reasoning integer NOT NULL DEFAULT 0;
ALTER TABLE usage_records ADD COLUMN cache_discount bigint NOT NULL DEFAULT 0;
