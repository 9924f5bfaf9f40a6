CREATE TABLE `workflow_executions` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`workflow_id` text NOT NULL,
	`workflow_version` integer NOT NULL,
	`contact_id` text NOT NULL,
	`trigger_key` text NOT NULL,
	`status` text DEFAULT 'RUNNING' NOT NULL,
	`current_step_id` text,
	`waiting_event` text,
	`resume_at` integer,
	`error` text,
	`history` text DEFAULT '[]' NOT NULL,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`workflow_id`) REFERENCES `workflows`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workflow_executions_trigger_uq` ON `workflow_executions` (`workflow_id`,`trigger_key`);--> statement-breakpoint
CREATE INDEX `workflow_executions_workflow_id_idx` ON `workflow_executions` (`workflow_id`,`id`);--> statement-breakpoint
CREATE INDEX `workflow_executions_workflow_status_id_idx` ON `workflow_executions` (`workflow_id`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `workflow_executions_workflow_contact_id_idx` ON `workflow_executions` (`workflow_id`,`contact_id`,`id`);--> statement-breakpoint
CREATE INDEX `workflow_executions_contact_waiting_idx` ON `workflow_executions` (`contact_id`,`waiting_event`,`status`);--> statement-breakpoint
CREATE TABLE `workflow_trigger_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`project_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`kind` text NOT NULL,
	`event_name` text,
	`event_id` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `workflow_trigger_outbox_project_idx` ON `workflow_trigger_outbox` (`project_id`,`id`);--> statement-breakpoint
CREATE TABLE `workflow_versions` (
	`workflow_id` text NOT NULL,
	`version` integer NOT NULL,
	`trigger_type` text NOT NULL,
	`trigger_event` text,
	`steps` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`workflow_id`) REFERENCES `workflows`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workflow_versions_pk` ON `workflow_versions` (`workflow_id`,`version`);--> statement-breakpoint
CREATE TABLE `workflows` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`enabled` integer DEFAULT false NOT NULL,
	`allow_reentry` integer DEFAULT false NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`trigger_type` text NOT NULL,
	`trigger_event` text,
	`steps` text DEFAULT '[]' NOT NULL,
	`webhook_secret_encrypted` text NOT NULL,
	`deleted_at` integer,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `workflows_project_id_idx` ON `workflows` (`project_id`,`id`);--> statement-breakpoint
CREATE INDEX `workflows_project_trigger_idx` ON `workflows` (`project_id`,`trigger_type`,`trigger_event`,`enabled`);