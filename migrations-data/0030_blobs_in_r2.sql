-- Issue 34: attachments, captured mail and uploaded import files live in R2 (src/store/objects/).
-- Attachments: the content is an R2 object named by object_key, its bytes counted in r2_usage
-- (prefix attachments/) instead of projects.stored_bytes. Rows written before keep their
-- blob_id: their content stays in blob_chunks until retention deletes them (nothing writes it now).
ALTER TABLE `email_attachments` ADD `object_key` text;
--> statement-breakpoint
UPDATE projects SET stored_bytes = max(0, stored_bytes
  - coalesce((SELECT sum(a.size) FROM email_attachments a WHERE (SELECT project_id FROM emails e WHERE e.send_id = a.send_id LIMIT 1) = projects.id), 0));
--> statement-breakpoint
DROP TRIGGER IF EXISTS email_attachments_bytes_insert;
--> statement-breakpoint
DROP TRIGGER IF EXISTS email_attachments_bytes_delete;
--> statement-breakpoint
-- Captured mail (local development only): the raw text in R2, the row keeps key, offset and size.
-- What was captured before is dropped (a local stand-in for the provider's outbox).
DELETE FROM blob_chunks WHERE blob_id IN (SELECT blob_id FROM captured_messages);
--> statement-breakpoint
DROP TABLE `captured_messages`;
--> statement-breakpoint
CREATE TABLE `captured_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`email_id` text NOT NULL,
	`project_id` text NOT NULL,
	`from_address` text NOT NULL,
	`to_address` text NOT NULL,
	`subject` text NOT NULL,
	`size` integer NOT NULL,
	`object_key` text NOT NULL,
	`object_offset` integer NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
-- Imports: the upload puts the CSV in R2 and records its chunks' byte ranges; no row is staged in D1.
-- An import open now was staged the old way: it is FAILED (import the file again).
UPDATE `contact_imports` SET status = 'FAILED', finished_at = unixepoch('subsec') * 1000, resume_row = 0,
  failure_reason = 'The import was interrupted by an upgrade of the service before it finished; the rows not yet processed were dropped. Import the file again.'
  WHERE status IN ('PENDING', 'PROCESSING');
--> statement-breakpoint
DROP TRIGGER IF EXISTS contact_import_rows_bytes_insert;
--> statement-breakpoint
DROP TRIGGER IF EXISTS contact_import_rows_bytes_update;
--> statement-breakpoint
DROP TRIGGER IF EXISTS contact_import_rows_bytes_delete;
--> statement-breakpoint
UPDATE projects SET stored_bytes = max(0, stored_bytes
  - coalesce((SELECT sum(length(CAST(r.cells AS BLOB)) + length(CAST(r.email_key AS BLOB))) FROM contact_import_rows r
      JOIN contact_imports i ON i.id = r.import_id WHERE i.project_id = projects.id), 0));
--> statement-breakpoint
DROP TABLE `contact_import_rows`;
--> statement-breakpoint
DELETE FROM `contact_import_chunks`;
--> statement-breakpoint
ALTER TABLE `contact_imports` ADD `object_key` text;
--> statement-breakpoint
ALTER TABLE `contact_imports` ADD `record_delimiter` text;
--> statement-breakpoint
CREATE TABLE `contact_import_ranges` (
	`import_id` text NOT NULL,
	`first_row` integer NOT NULL,
	`last_row` integer NOT NULL,
	`start_byte` integer NOT NULL,
	`end_byte` integer NOT NULL,
	`rows` integer NOT NULL,
	`skip` text DEFAULT '[]' NOT NULL,
	PRIMARY KEY(`import_id`, `first_row`),
	FOREIGN KEY (`import_id`) REFERENCES `contact_imports`(`id`) ON UPDATE no action ON DELETE cascade
);
