-- Issue 34: fewer D1 rows written per email. D1 bills every row it writes, and an UPDATE
-- rewrites the entry of every index whose columns (or partial-index condition) it sets;
-- an INSERT writes one entry per index. Measured with meta.rows_written
-- (test/store/rows-written.test.ts; docs/performance.md "Rows written per email").
--
-- The stuck-mail sweep is the only reader of (status, updated_at), and only for QUEUED
-- and SENDING mail: indexed only while an email is QUEUED or SENDING, so the
-- DELIVERED, OPENED and CLICKED updates (which set status and updated_at) write no
-- entry here. Its queries carry `status IN ('QUEUED', 'SENDING')` so SQLite uses it.
DROP INDEX `emails_status_updated_idx`;--> statement-breakpoint
CREATE INDEX `emails_pending_idx` ON `emails` (`status`,`updated_at`) WHERE status IN ('QUEUED', 'SENDING');--> statement-breakpoint
-- The HTML retention reads only final emails (dropOldHtml's query has both terms): a
-- QUEUED or SENDING email is no longer indexed here, and one sent with its HTML moved
-- to R2 (html = '') never is; only a FAILED email (or one sent before migration 0029)
-- waits here for its HTML to be dropped.
DROP INDEX `emails_html_kept_idx`;--> statement-breakpoint
CREATE INDEX `emails_html_kept_idx` ON `emails` (`id`) WHERE html != '' AND status NOT IN ('QUEUED', 'SENDING');--> statement-breakpoint
-- (contact_id, name, created_at) serves every lookup by contact (conditions, activity,
-- the contact's events list, the cascade on contact deletion): (contact_id, id) only
-- saved the contact's events list a sort by id, at one entry per event.
DROP INDEX `events_contact_id_idx`;
--> statement-breakpoint
-- Stored bytes (migration 0019) no longer count an empty JSON object: an event without data
-- and a sent email (its HTML in R2, its headers '{}' since 0022) add and take off nothing, so
-- their insert and delete write no projects row (opens, most events, every archived email).
DROP TRIGGER `emails_bytes_insert`;--> statement-breakpoint
CREATE TRIGGER emails_bytes_insert AFTER INSERT ON emails
  WHEN NEW.html != '' OR NEW.headers != '{}'
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.html AS BLOB))
    + CASE NEW.headers WHEN '{}' THEN 0 ELSE length(CAST(NEW.headers AS BLOB)) END WHERE id = NEW.project_id;
END;--> statement-breakpoint
DROP TRIGGER `emails_bytes_update`;--> statement-breakpoint
CREATE TRIGGER emails_bytes_update AFTER UPDATE OF html, headers ON emails
  WHEN OLD.html IS NOT NEW.html OR OLD.headers IS NOT NEW.headers
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes
    + length(CAST(NEW.html AS BLOB)) + CASE NEW.headers WHEN '{}' THEN 0 ELSE length(CAST(NEW.headers AS BLOB)) END
    - length(CAST(OLD.html AS BLOB)) - CASE OLD.headers WHEN '{}' THEN 0 ELSE length(CAST(OLD.headers AS BLOB)) END) WHERE id = NEW.project_id;
END;--> statement-breakpoint
DROP TRIGGER `emails_bytes_delete`;--> statement-breakpoint
CREATE TRIGGER emails_bytes_delete AFTER DELETE ON emails
  WHEN OLD.html != '' OR OLD.headers != '{}'
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.html AS BLOB))
    - CASE OLD.headers WHEN '{}' THEN 0 ELSE length(CAST(OLD.headers AS BLOB)) END) WHERE id = OLD.project_id;
END;--> statement-breakpoint
DROP TRIGGER `events_bytes_insert`;--> statement-breakpoint
CREATE TRIGGER events_bytes_insert AFTER INSERT ON events
  WHEN NEW.data != '{}'
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.data AS BLOB)) WHERE id = NEW.project_id;
END;--> statement-breakpoint
DROP TRIGGER `events_bytes_delete`;--> statement-breakpoint
CREATE TRIGGER events_bytes_delete AFTER DELETE ON events
  WHEN OLD.data != '{}'
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.data AS BLOB))) WHERE id = OLD.project_id;
END;--> statement-breakpoint
-- The two bytes each existing '{}' was counted with, taken off once (one pass over both tables).
UPDATE projects SET stored_bytes = max(0, stored_bytes
  - 2 * (SELECT count(*) FROM emails WHERE emails.project_id = projects.id AND emails.headers = '{}')
  - 2 * (SELECT count(*) FROM events WHERE events.project_id = projects.id AND events.data = '{}'));
