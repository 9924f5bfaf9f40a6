-- Issue 34: the hot window. Email records, events and webhook deliveries older than
-- EMAIL_HOT_DAYS move to R2 as gzipped NDJSON parts, one object per project, kind, UTC day
-- and part (src/store/objects/archive.ts). A part's row is written in the same batch that
-- deletes its records from D1, so a record is either in D1 or in a committed part: a part
-- object written before a crash and never committed is written again under the same key.
-- Reads by id and exports find a day's parts here (the id's UUIDv7 time gives the day).
CREATE TABLE archive_runs (
  project_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  day INTEGER NOT NULL,
  part INTEGER NOT NULL,
  r2_key TEXT NOT NULL,
  first_id TEXT NOT NULL,
  last_id TEXT NOT NULL,
  rows INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, kind, day, part)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX archive_runs_day_idx ON archive_runs (day);
