-- Imports as other tools export them (CONTRACT "Contact import as exported"): the column plan the
-- upload settled (each column's role, data key and type: a `columns` mapping, else inferred from
-- every cell) and the rows a later row of the same address replaced. The plan counts in
-- projects.stored_bytes as the header and errors do (the job triggers of 0025, recreated).
ALTER TABLE `contact_imports` ADD `column_plan` text;--> statement-breakpoint
ALTER TABLE `contact_imports` ADD `duplicates` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
DROP TRIGGER IF EXISTS contact_imports_bytes_insert;--> statement-breakpoint
CREATE TRIGGER contact_imports_bytes_insert AFTER INSERT ON contact_imports
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.columns AS BLOB)) + length(CAST(NEW.errors AS BLOB))
    + coalesce(length(CAST(NEW.failure_reason AS BLOB)), 0) + coalesce(length(CAST(NEW.column_plan AS BLOB)), 0) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
DROP TRIGGER IF EXISTS contact_imports_bytes_update;--> statement-breakpoint
CREATE TRIGGER contact_imports_bytes_update AFTER UPDATE OF errors, failure_reason, column_plan ON contact_imports
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.errors AS BLOB)) + coalesce(length(CAST(NEW.failure_reason AS BLOB)), 0)
    + coalesce(length(CAST(NEW.column_plan AS BLOB)), 0)
    - length(CAST(OLD.errors AS BLOB)) - coalesce(length(CAST(OLD.failure_reason AS BLOB)), 0)
    - coalesce(length(CAST(OLD.column_plan AS BLOB)), 0)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
DROP TRIGGER IF EXISTS contact_imports_bytes_delete;--> statement-breakpoint
CREATE TRIGGER contact_imports_bytes_delete AFTER DELETE ON contact_imports
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.columns AS BLOB)) - length(CAST(OLD.errors AS BLOB))
    - coalesce(length(CAST(OLD.failure_reason AS BLOB)), 0) - coalesce(length(CAST(OLD.column_plan AS BLOB)), 0)) WHERE id = OLD.project_id;
END;
