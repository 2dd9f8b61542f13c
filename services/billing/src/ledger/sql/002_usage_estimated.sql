-- Migration 002_usage_estimated: whether a record's charge rests on the gateway's own measure rather than the
-- upstream's report (a transcription whose upstream gave no duration is charged on the measured upload).
-- Every existing record was charged on reported usage, hence the default.
ALTER TABLE usage_records ADD COLUMN usage_estimated boolean NOT NULL DEFAULT false;
