ALTER TABLE `projects` ADD `stored_bytes` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `emails_html_kept_idx` ON `emails` (`id`) WHERE html != '';