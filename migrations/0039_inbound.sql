-- Inbound email (issue 37, CONTRACT "Inbound email"): one row per message the email() handler
-- accepted. email() writes it RECEIVED with the envelope and the raw message's R2 key
-- (inbound/<project>/<yyyy-mm-dd>/<id>.eml, counted in r2_usage); the inbound queue's consumer
-- parses the raw message and writes the rest (PARSED, or FAILED with its error) in one batch
-- with the email.received event and webhook. Kept 30 days (retention cron; the objects by the
-- bucket's lifecycle rule on inbound/). text, stripped_text and attachments_json are capped by
-- the consumer (src/services/inbound/parse.ts); references_json holds at most 100 ids.
CREATE TABLE `inbound_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`email_id` text,
	`contact_id` text,
	`route` text NOT NULL,
	`envelope_from` text NOT NULL,
	`envelope_to` text NOT NULL,
	`from_address` text,
	`from_name` text,
	`subject` text,
	`message_id` text,
	`in_reply_to` text,
	`references_json` text DEFAULT '[]' NOT NULL,
	`match` text DEFAULT 'NONE' NOT NULL,
	`auto_reply` integer DEFAULT false NOT NULL,
	`size` integer NOT NULL,
	`r2_key` text NOT NULL,
	`text` text,
	`stripped_text` text,
	`attachments_json` text DEFAULT '[]' NOT NULL,
	`status` text DEFAULT 'RECEIVED' NOT NULL,
	`error` text,
	`created_at` integer NOT NULL,
	`parsed_at` integer
);
--> statement-breakpoint
CREATE INDEX `inbound_messages_project_id_idx` ON `inbound_messages` (`project_id`,`id`);--> statement-breakpoint
CREATE INDEX `inbound_messages_email_idx` ON `inbound_messages` (`email_id`,`id`) WHERE email_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `inbound_messages_contact_idx` ON `inbound_messages` (`contact_id`,`id`) WHERE contact_id IS NOT NULL;--> statement-breakpoint
-- Messages not parsed yet: the cron queues again those whose queue message was lost.
CREATE INDEX `inbound_messages_received_idx` ON `inbound_messages` (`id`) WHERE status = 'RECEIVED';--> statement-breakpoint
-- Messages received per project and UTC day (QUOTA_INBOUND_PER_DAY), counted by the trigger below.
ALTER TABLE `project_daily_usage` ADD `inbound` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE TRIGGER inbound_messages_usage_insert AFTER INSERT ON inbound_messages
BEGIN
  INSERT INTO project_daily_usage (project_id, day, inbound) VALUES (NEW.project_id, CAST(NEW.created_at / 86400000 AS INTEGER), 1)
    ON CONFLICT (project_id, day) DO UPDATE SET inbound = inbound + 1;
END;
--> statement-breakpoint
-- projects.stored_bytes (QUOTA_STORED_BYTES): the row's texts, plus a fixed 200 bytes for its envelope and ids.
CREATE TRIGGER inbound_messages_bytes_insert AFTER INSERT ON inbound_messages
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + 200 + coalesce(length(CAST(NEW.subject AS BLOB)), 0)
    + coalesce(length(CAST(NEW.text AS BLOB)), 0) + coalesce(length(CAST(NEW.stripped_text AS BLOB)), 0)
    + length(CAST(NEW.attachments_json AS BLOB)) + length(CAST(NEW.references_json AS BLOB)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER inbound_messages_bytes_update AFTER UPDATE OF subject, text, stripped_text, attachments_json, references_json ON inbound_messages
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes
    + coalesce(length(CAST(NEW.subject AS BLOB)), 0) + coalesce(length(CAST(NEW.text AS BLOB)), 0) + coalesce(length(CAST(NEW.stripped_text AS BLOB)), 0)
    + length(CAST(NEW.attachments_json AS BLOB)) + length(CAST(NEW.references_json AS BLOB))
    - coalesce(length(CAST(OLD.subject AS BLOB)), 0) - coalesce(length(CAST(OLD.text AS BLOB)), 0) - coalesce(length(CAST(OLD.stripped_text AS BLOB)), 0)
    - length(CAST(OLD.attachments_json AS BLOB)) - length(CAST(OLD.references_json AS BLOB))) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER inbound_messages_bytes_delete AFTER DELETE ON inbound_messages
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - 200 - coalesce(length(CAST(OLD.subject AS BLOB)), 0)
    - coalesce(length(CAST(OLD.text AS BLOB)), 0) - coalesce(length(CAST(OLD.stripped_text AS BLOB)), 0)
    - length(CAST(OLD.attachments_json AS BLOB)) - length(CAST(OLD.references_json AS BLOB))) WHERE id = OLD.project_id;
END;
