-- A project's default sender (PATCH /project defaultFrom): used by /v1/send and campaigns when
-- neither the request nor its template gives a from address. On every shard's projects row.
ALTER TABLE `projects` ADD `default_from_email` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `default_from_name` text;
