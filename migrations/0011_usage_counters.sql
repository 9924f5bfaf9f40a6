CREATE TABLE `project_daily_usage` (
	`project_id` text NOT NULL,
	`day` integer NOT NULL,
	`events` integer DEFAULT 0 NOT NULL,
	`emails` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`project_id`, `day`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `project_daily_usage_day_idx` ON `project_daily_usage` (`day`);--> statement-breakpoint
CREATE TABLE `project_usage` (
	`project_id` text PRIMARY KEY NOT NULL,
	`contacts` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
