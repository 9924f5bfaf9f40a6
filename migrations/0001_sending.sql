CREATE TABLE `blob_chunks` (
	`blob_id` text NOT NULL,
	`seq` integer NOT NULL,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `blob_chunks_pk` ON `blob_chunks` (`blob_id`,`seq`);--> statement-breakpoint
CREATE TABLE `captured_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`email_id` text NOT NULL,
	`project_id` text NOT NULL,
	`from_address` text NOT NULL,
	`to_address` text NOT NULL,
	`subject` text NOT NULL,
	`size` integer NOT NULL,
	`blob_id` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `captured_messages_id_idx` ON `captured_messages` (`id`);--> statement-breakpoint
CREATE TABLE `email_attachments` (
	`id` text PRIMARY KEY NOT NULL,
	`send_id` text NOT NULL,
	`position` integer NOT NULL,
	`filename` text NOT NULL,
	`content_type` text NOT NULL,
	`size` integer NOT NULL,
	`blob_id` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `email_attachments_send_idx` ON `email_attachments` (`send_id`,`position`);--> statement-breakpoint
CREATE TABLE `emails` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`contact_id` text,
	`send_id` text NOT NULL,
	`template_id` text,
	`campaign_id` text,
	`from_address` text NOT NULL,
	`from_name` text,
	`to_address` text NOT NULL,
	`to_name` text,
	`reply_to` text,
	`subject` text NOT NULL,
	`html` text NOT NULL,
	`headers` text DEFAULT '{}' NOT NULL,
	`marketing` integer DEFAULT false NOT NULL,
	`has_attachments` integer DEFAULT false NOT NULL,
	`status` text DEFAULT 'QUEUED' NOT NULL,
	`error` text,
	`message_id` text NOT NULL,
	`provider_message_id` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`opens` integer DEFAULT 0 NOT NULL,
	`clicks` integer DEFAULT 0 NOT NULL,
	`queued_at` integer,
	`sending_at` integer,
	`sent_at` integer,
	`delivered_at` integer,
	`opened_at` integer,
	`clicked_at` integer,
	`bounced_at` integer,
	`complained_at` integer,
	`failed_at` integer,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `emails_project_id_idx` ON `emails` (`project_id`,`id`);--> statement-breakpoint
CREATE INDEX `emails_project_status_id_idx` ON `emails` (`project_id`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `emails_contact_id_idx` ON `emails` (`contact_id`,`id`);--> statement-breakpoint
CREATE INDEX `emails_send_idx` ON `emails` (`send_id`);--> statement-breakpoint
CREATE INDEX `emails_provider_message_idx` ON `emails` (`provider_message_id`);--> statement-breakpoint
CREATE INDEX `emails_status_updated_idx` ON `emails` (`status`,`updated_at`);--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`project_id` text NOT NULL,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`send_id` text NOT NULL,
	`response` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `idempotency_keys_pk` ON `idempotency_keys` (`project_id`,`key`);--> statement-breakpoint
CREATE INDEX `idempotency_keys_created_idx` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
CREATE TABLE `suppressions` (
	`project_id` text NOT NULL,
	`email` text NOT NULL,
	`reason` text NOT NULL,
	`detail` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `suppressions_pk` ON `suppressions` (`project_id`,`email`);