CREATE TABLE `campaigns` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`subject` text NOT NULL,
	`body` text NOT NULL,
	`from_address` text NOT NULL,
	`from_name` text,
	`reply_to` text,
	`audience_type` text NOT NULL,
	`segment_id` text,
	`audience_filter` text,
	`status` text DEFAULT 'DRAFT' NOT NULL,
	`scheduled_at` integer,
	`sent_at` integer,
	`started_at` integer,
	`send_condition` text,
	`audience_upper_id` text,
	`send_cursor` text,
	`audience_done` integer DEFAULT false NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `campaigns_project_id_idx` ON `campaigns` (`project_id`,`id`);--> statement-breakpoint
CREATE INDEX `campaigns_project_status_id_idx` ON `campaigns` (`project_id`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `campaigns_status_scheduled_idx` ON `campaigns` (`status`,`scheduled_at`);--> statement-breakpoint
CREATE INDEX `campaigns_segment_idx` ON `campaigns` (`segment_id`);--> statement-breakpoint
CREATE TABLE `segments` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`condition` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `segments_project_id_idx` ON `segments` (`project_id`,`id`);--> statement-breakpoint
ALTER TABLE `emails` ADD `tracked` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `emails` ADD `bulk` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `emails_campaign_contact_uq` ON `emails` (`campaign_id`,`contact_id`);--> statement-breakpoint
CREATE INDEX `emails_campaign_status_idx` ON `emails` (`campaign_id`,`status`);--> statement-breakpoint
CREATE INDEX `emails_project_campaign_id_idx` ON `emails` (`project_id`,`campaign_id`,`id`);--> statement-breakpoint
CREATE INDEX `events_contact_name_created_idx` ON `events` (`contact_id`,`name`,`created_at`);