-- Static segments (CONTRACT "Static segments"): a segment is DYNAMIC (its condition, as before) or
-- STATIC (its members, segment_members rows added and removed by email). Deleting the segment or the
-- contact deletes the membership (ON DELETE CASCADE); a member counts a fixed 64 bytes in
-- projects.stored_bytes (QUOTA_STORED_BYTES).
ALTER TABLE `segments` ADD `type` text DEFAULT 'DYNAMIC' NOT NULL;--> statement-breakpoint
CREATE TABLE `segment_members` (
	`segment_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`project_id` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	PRIMARY KEY(`segment_id`, `contact_id`),
	FOREIGN KEY (`segment_id`) REFERENCES `segments`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `segment_members_contact_idx` ON `segment_members` (`contact_id`);--> statement-breakpoint
CREATE TRIGGER segment_members_bytes_insert AFTER INSERT ON segment_members
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + 64 WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER segment_members_bytes_delete AFTER DELETE ON segment_members
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - 64) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
-- Campaign pause (POST /campaigns/{id}/pause, /resume): while 1 the claim takes none of its emails and
-- the audience walk writes no page.
ALTER TABLE `campaigns` ADD `paused` integer DEFAULT false NOT NULL;--> statement-breakpoint
-- Tracking control (CONTRACT "Tracking control and pausing"): the project's mode (tracking_enabled
-- stays, kept equal to mode <> 'DISABLED' for older readers), a sending domain's switches and custom
-- tracking hostname (a CNAME to the service's host, checked over DNS), and a send's own choice
-- (emails.track_opens / track_clicks: NULL follows the project and domain).
ALTER TABLE `projects` ADD `tracking_mode` text DEFAULT 'ENABLED' NOT NULL;--> statement-breakpoint
UPDATE `projects` SET `tracking_mode` = 'DISABLED' WHERE `tracking_enabled` = 0;--> statement-breakpoint
ALTER TABLE `emails` ADD `track_opens` integer;--> statement-breakpoint
ALTER TABLE `emails` ADD `track_clicks` integer;
