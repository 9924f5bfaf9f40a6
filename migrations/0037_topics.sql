-- Topics (CONTRACT "Topics and the preference page"): what a contact agreed to receive, per project.
-- `key` and `default_subscription` never change after creation. A contact's explicit choice is a
-- contact_topics row (no row: the topic's default); deleting a contact or a topic deletes its
-- choices (ON DELETE CASCADE). Mail aimed at a topic: campaigns.topic_id, emails.topic_id (List-Id,
-- the one-click unsubscribe of that topic only, and the claim's topic check).
CREATE TABLE `topics` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`key` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`default_subscription` text NOT NULL,
	`visibility` text DEFAULT 'PRIVATE' NOT NULL,
	`double_opt_in` integer DEFAULT false NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `topics_project_key_uq` ON `topics` (`project_id`,`key`);--> statement-breakpoint
CREATE INDEX `topics_project_id_idx` ON `topics` (`project_id`,`id`);--> statement-breakpoint
CREATE TABLE `contact_topics` (
	`contact_id` text NOT NULL,
	`topic_id` text NOT NULL,
	`project_id` text NOT NULL,
	`status` text NOT NULL,
	`source` text NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	PRIMARY KEY(`contact_id`, `topic_id`),
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`topic_id`) REFERENCES `topics`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contact_topics_topic_status_idx` ON `contact_topics` (`topic_id`,`status`,`contact_id`);--> statement-breakpoint
ALTER TABLE `campaigns` ADD `topic_id` text;--> statement-breakpoint
ALTER TABLE `emails` ADD `topic_id` text;--> statement-breakpoint
-- A topic's name and description count in projects.stored_bytes; a choice counts a fixed 64 bytes.
CREATE TRIGGER topics_bytes_insert AFTER INSERT ON topics
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.name AS BLOB)) + coalesce(length(CAST(NEW.description AS BLOB)), 0) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER topics_bytes_update AFTER UPDATE OF name, description ON topics
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.name AS BLOB)) + coalesce(length(CAST(NEW.description AS BLOB)), 0)
    - length(CAST(OLD.name AS BLOB)) - coalesce(length(CAST(OLD.description AS BLOB)), 0)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER topics_bytes_delete AFTER DELETE ON topics
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.name AS BLOB)) - coalesce(length(CAST(OLD.description AS BLOB)), 0)) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
-- QUOTA_TOPICS: its own guard beside quota_checks_guard (which RAISEs UNKNOWN for a quota it does not know).
CREATE TRIGGER quota_checks_topics BEFORE INSERT ON quota_checks WHEN NEW.quota = 'QUOTA_TOPICS' AND NEW.used > NEW.quota_limit
BEGIN
  SELECT RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_TOPICS');
END;
--> statement-breakpoint
CREATE TRIGGER contact_topics_bytes_insert AFTER INSERT ON contact_topics
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + 64 WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER contact_topics_bytes_delete AFTER DELETE ON contact_topics
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - 64) WHERE id = OLD.project_id;
END;
