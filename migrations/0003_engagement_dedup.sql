ALTER TABLE `emails` ADD `last_opened_at` integer;--> statement-breakpoint
ALTER TABLE `emails` ADD `last_clicked_at` integer;