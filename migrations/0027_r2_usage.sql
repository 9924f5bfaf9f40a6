-- Issue 34: what each project keeps in R2, counted apart from what it keeps in D1
-- (projects.stored_bytes). One row per project, key prefix and UTC day of writing: an
-- object expires by its prefix's lifecycle rule at an age in days, so the cron drops the
-- rows of the days that expired and the triggers take their bytes off the project.
CREATE TABLE r2_usage (
  project_id TEXT NOT NULL,
  prefix TEXT NOT NULL,
  day INTEGER NOT NULL,
  bytes INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, prefix, day)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX r2_usage_prefix_day ON r2_usage (prefix, day);
--> statement-breakpoint
ALTER TABLE projects ADD COLUMN r2_stored_bytes INTEGER NOT NULL DEFAULT 0;
--> statement-breakpoint
CREATE TRIGGER r2_usage_insert AFTER INSERT ON r2_usage
BEGIN
  UPDATE projects SET r2_stored_bytes = r2_stored_bytes + NEW.bytes WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER r2_usage_update AFTER UPDATE OF bytes ON r2_usage
BEGIN
  UPDATE projects SET r2_stored_bytes = r2_stored_bytes + NEW.bytes - OLD.bytes WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER r2_usage_delete AFTER DELETE ON r2_usage
BEGIN
  UPDATE projects SET r2_stored_bytes = r2_stored_bytes - OLD.bytes WHERE id = OLD.project_id;
END;
