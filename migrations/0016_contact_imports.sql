CREATE TABLE `contact_import_chunks` (
	`import_id` text NOT NULL,
	`first_row` integer NOT NULL,
	`outbox_mark` integer NOT NULL,
	PRIMARY KEY(`import_id`, `first_row`),
	FOREIGN KEY (`import_id`) REFERENCES `contact_imports`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `contact_import_rows` (
	`import_id` text NOT NULL,
	`email_key` text NOT NULL,
	`row` integer NOT NULL,
	`cells` text NOT NULL,
	PRIMARY KEY(`import_id`, `email_key`),
	FOREIGN KEY (`import_id`) REFERENCES `contact_imports`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contact_import_rows_row_idx` ON `contact_import_rows` (`import_id`,`row`);--> statement-breakpoint
CREATE TABLE `contact_imports` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`status` text DEFAULT 'PENDING' NOT NULL,
	`columns` text NOT NULL,
	`default_subscribed` integer,
	`total` integer DEFAULT 0 NOT NULL,
	`processed` integer DEFAULT 0 NOT NULL,
	`created` integer DEFAULT 0 NOT NULL,
	`updated` integer DEFAULT 0 NOT NULL,
	`failed` integer DEFAULT 0 NOT NULL,
	`errors` text DEFAULT '[]' NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contact_imports_project_id_idx` ON `contact_imports` (`project_id`,`id`);