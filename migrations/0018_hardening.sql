ALTER TABLE `events` ADD `source` text DEFAULT 'system' NOT NULL;--> statement-breakpoint
ALTER TABLE `workflows` ADD `allow_public_events` integer DEFAULT false NOT NULL;