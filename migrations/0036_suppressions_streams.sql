-- Suppressions per stream (CONTRACT "Suppressions and streams"; src/services/consent/gates.ts): a
-- suppression stops ALL mail (BOUNCE, COMPLAINT, MANUAL) or BROADCAST mail only (UNSUBSCRIBE), with a
-- note (POST /suppressions). Each filter of GET /suppressions has its index: the project's list newest
-- first, by reason; an address is found through suppressions_pk.
ALTER TABLE `suppressions` ADD `stream` text DEFAULT 'ALL' NOT NULL;--> statement-breakpoint
ALTER TABLE `suppressions` ADD `note` text;--> statement-breakpoint
CREATE INDEX `suppressions_project_created_idx` ON `suppressions` (`project_id`,`created_at`,`email`);--> statement-breakpoint
CREATE INDEX `suppressions_project_reason_idx` ON `suppressions` (`project_id`,`reason`,`created_at`,`email`);--> statement-breakpoint
-- An unsubscribe is an UNSUBSCRIBE suppression of broadcast mail, whatever path unsubscribes (a link,
-- one-click, the API, an import, a workflow): a contact going from subscribed to unsubscribed adds
-- one (the first suppression of an address is kept). Subscribing again (any path, the confirm link
-- included), or a contact created subscribed, removes it; a bounce, complaint or manual entry stays.
-- A contact created unsubscribed (never subscribed: double opt-in pending, an import) adds none.
CREATE TRIGGER contacts_unsubscribe_suppression AFTER UPDATE OF subscribed ON contacts
WHEN OLD.subscribed = 1 AND NEW.subscribed = 0
BEGIN
  INSERT INTO suppressions (project_id, email, reason, stream, created_at)
  VALUES (NEW.project_id, NEW.email, 'UNSUBSCRIBE', 'BROADCAST', CAST(unixepoch('subsec') * 1000 AS INTEGER))
  ON CONFLICT (project_id, email) DO NOTHING;
END;
--> statement-breakpoint
CREATE TRIGGER contacts_resubscribe_suppression AFTER UPDATE OF subscribed ON contacts
WHEN OLD.subscribed = 0 AND NEW.subscribed = 1
BEGIN
  DELETE FROM suppressions WHERE project_id = NEW.project_id AND email = NEW.email AND reason = 'UNSUBSCRIBE';
END;
--> statement-breakpoint
CREATE TRIGGER contacts_subscribed_insert_suppression AFTER INSERT ON contacts
WHEN NEW.subscribed = 1
BEGIN
  DELETE FROM suppressions WHERE project_id = NEW.project_id AND email = NEW.email AND reason = 'UNSUBSCRIBE';
END;
--> statement-breakpoint
-- QUOTA_SUPPRESSIONS (manual entries a POST /suppressions adds): its own guard beside quota_checks_guard.
CREATE TRIGGER quota_checks_suppressions BEFORE INSERT ON quota_checks WHEN NEW.quota = 'QUOTA_SUPPRESSIONS' AND NEW.used > NEW.quota_limit
BEGIN
  SELECT RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_SUPPRESSIONS');
END;
