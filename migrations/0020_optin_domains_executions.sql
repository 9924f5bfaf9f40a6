CREATE TABLE `domain_releases` (
	`name` text NOT NULL,
	`project_id` text NOT NULL,
	`claimed_at` integer NOT NULL,
	`released_at` integer NOT NULL,
	PRIMARY KEY(`name`, `project_id`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `domain_releases_released_idx` ON `domain_releases` (`released_at`);--> statement-breakpoint
ALTER TABLE `projects` ADD `double_opt_in` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `projects` ADD `double_opt_in_template_id` text;--> statement-breakpoint
CREATE INDEX `workflow_executions_project_status_idx` ON `workflow_executions` (`project_id`,`status`);