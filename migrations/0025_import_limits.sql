-- Issue 38 I1: import staging counted in projects.stored_bytes, at most a few
-- imports open per project, and the cron's recovery of dead uploads and lost chunks.
-- progress_at: the last time the upload staged rows or a chunk was applied (ms);
-- resume_row: how far the cron's current re-queue round got (0: no round);
-- failure_reason: why a FAILED import failed, shown by GET /contacts/imports/{id}.
ALTER TABLE `contact_imports` ADD `failure_reason` text;
--> statement-breakpoint
ALTER TABLE `contact_imports` ADD `progress_at` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
ALTER TABLE `contact_imports` ADD `resume_row` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
UPDATE `contact_imports` SET `progress_at` = `created_at`;
--> statement-breakpoint
-- Only open imports are indexed: the per-project cap counts them, the cron scans them.
CREATE INDEX `contact_imports_open_idx` ON `contact_imports` (`project_id`) WHERE status IN ('PENDING', 'PROCESSING');
--> statement-breakpoint
CREATE INDEX `contact_imports_progress_idx` ON `contact_imports` (`progress_at`) WHERE status IN ('PENDING', 'PROCESSING');
--> statement-breakpoint
-- Staged rows: their cells and key (UTF-8 bytes), project found by the import. An
-- import's rows must be deleted before the import itself (a cascade would find no project).
CREATE TRIGGER contact_import_rows_bytes_insert AFTER INSERT ON contact_import_rows
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.cells AS BLOB)) + length(CAST(NEW.email_key AS BLOB))
    WHERE id = (SELECT project_id FROM contact_imports WHERE id = NEW.import_id);
END;
--> statement-breakpoint
-- A later row with the same address replaces the earlier one (the staging upsert's DO UPDATE).
CREATE TRIGGER contact_import_rows_bytes_update AFTER UPDATE OF cells ON contact_import_rows
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.cells AS BLOB)) - length(CAST(OLD.cells AS BLOB)))
    WHERE id = (SELECT project_id FROM contact_imports WHERE id = NEW.import_id);
END;
--> statement-breakpoint
CREATE TRIGGER contact_import_rows_bytes_delete AFTER DELETE ON contact_import_rows
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.cells AS BLOB)) - length(CAST(OLD.email_key AS BLOB)))
    WHERE id = (SELECT project_id FROM contact_imports WHERE id = OLD.import_id);
END;
--> statement-breakpoint
-- The job itself: its header, kept errors and failure reason.
CREATE TRIGGER contact_imports_bytes_insert AFTER INSERT ON contact_imports
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.columns AS BLOB)) + length(CAST(NEW.errors AS BLOB))
    + coalesce(length(CAST(NEW.failure_reason AS BLOB)), 0) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER contact_imports_bytes_update AFTER UPDATE OF errors, failure_reason ON contact_imports
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.errors AS BLOB)) + coalesce(length(CAST(NEW.failure_reason AS BLOB)), 0)
    - length(CAST(OLD.errors AS BLOB)) - coalesce(length(CAST(OLD.failure_reason AS BLOB)), 0)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER contact_imports_bytes_delete AFTER DELETE ON contact_imports
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.columns AS BLOB)) - length(CAST(OLD.errors AS BLOB))
    - coalesce(length(CAST(OLD.failure_reason AS BLOB)), 0)) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
-- What exists already.
UPDATE projects SET stored_bytes = stored_bytes
  + coalesce((SELECT sum(length(CAST(r.cells AS BLOB)) + length(CAST(r.email_key AS BLOB))) FROM contact_import_rows r
      JOIN contact_imports i ON i.id = r.import_id WHERE i.project_id = projects.id), 0)
  + coalesce((SELECT sum(length(CAST(columns AS BLOB)) + length(CAST(errors AS BLOB))) FROM contact_imports WHERE project_id = projects.id), 0);
