DROP INDEX `emails_provider_message_idx`;--> statement-breakpoint
DROP INDEX `emails_campaign_contact_uq`;--> statement-breakpoint
DROP INDEX `emails_campaign_status_idx`;--> statement-breakpoint
DROP INDEX `emails_project_campaign_id_idx`;--> statement-breakpoint
CREATE INDEX `emails_provider_message_idx` ON `emails` (`provider_message_id`) WHERE provider_message_id IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `emails_campaign_contact_uq` ON `emails` (`campaign_id`,`contact_id`) WHERE campaign_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `emails_campaign_status_idx` ON `emails` (`campaign_id`,`status`) WHERE campaign_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX `emails_project_campaign_id_idx` ON `emails` (`project_id`,`campaign_id`,`id`) WHERE campaign_id IS NOT NULL;