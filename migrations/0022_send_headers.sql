CREATE TABLE `send_headers` (
	`send_id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`headers` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
-- Issue 24 H1: custom headers stored once per send (send_headers) instead of
-- on every recipient's emails row. Counted in projects.stored_bytes like the
-- rest of 0019 (UTF-8 bytes of the JSON), and deleted with the send's last
-- email, whatever deletes it (the retention cron, a project's deletion).
CREATE TRIGGER send_headers_bytes_insert AFTER INSERT ON send_headers
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.headers AS BLOB)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER send_headers_bytes_delete AFTER DELETE ON send_headers
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.headers AS BLOB))) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
-- A primary-key probe per deleted email (most sends have no row); the NOT EXISTS
-- (index emails_send_idx) only runs when the send has headers.
CREATE TRIGGER emails_send_headers_delete AFTER DELETE ON emails
BEGIN
  DELETE FROM send_headers WHERE send_id = OLD.send_id AND NOT EXISTS (SELECT 1 FROM emails WHERE send_id = OLD.send_id);
END;
--> statement-breakpoint
-- What exists already: one row per send that has headers, then the copies
-- emptied (the triggers move the bytes: + once, - per copy).
INSERT INTO send_headers (send_id, project_id, headers, created_at)
  SELECT send_id, min(project_id), min(headers), min(created_at) FROM emails WHERE headers != '{}' GROUP BY send_id;
--> statement-breakpoint
UPDATE emails SET headers = '{}' WHERE headers != '{}';
