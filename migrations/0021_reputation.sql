CREATE TABLE `project_reputation` (
	`project_id` text NOT NULL,
	`day` integer NOT NULL,
	`sent` integer DEFAULT 0 NOT NULL,
	`bounced` integer DEFAULT 0 NOT NULL,
	`complained` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`project_id`, `day`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `project_reputation_day_idx` ON `project_reputation` (`day`);--> statement-breakpoint
ALTER TABLE `projects` ADD `sending_paused_at` integer;--> statement-breakpoint
ALTER TABLE `projects` ADD `sending_paused_reason` text;--> statement-breakpoint
ALTER TABLE `projects` ADD `sending_resumed_at` integer;--> statement-breakpoint
-- The reputation counters (project_reputation in src/db/schema.ts), kept by
-- triggers on emails so every path that sends or applies feedback counts. Each
-- fires only when its timestamp goes from unset to set, and only for UPDATEs
-- that name the column: one small upsert per email sent, bounced or complained.
CREATE TRIGGER emails_reputation_sent AFTER UPDATE OF sent_at ON emails
  WHEN OLD.sent_at IS NULL AND NEW.sent_at IS NOT NULL
BEGIN
  INSERT INTO project_reputation (project_id, day, sent) VALUES (NEW.project_id, CAST(NEW.sent_at / 86400000 AS INTEGER), 1)
    ON CONFLICT (project_id, day) DO UPDATE SET sent = sent + 1;
END;
--> statement-breakpoint
CREATE TRIGGER emails_reputation_bounced AFTER UPDATE OF bounced_at ON emails
  WHEN OLD.bounced_at IS NULL AND NEW.bounced_at IS NOT NULL
BEGIN
  INSERT INTO project_reputation (project_id, day, bounced) VALUES (NEW.project_id, CAST(unixepoch('subsec') * 1000 / 86400000 AS INTEGER), 1)
    ON CONFLICT (project_id, day) DO UPDATE SET bounced = bounced + 1;
END;
--> statement-breakpoint
CREATE TRIGGER emails_reputation_complained AFTER UPDATE OF complained_at ON emails
  WHEN OLD.complained_at IS NULL AND NEW.complained_at IS NOT NULL
BEGIN
  INSERT INTO project_reputation (project_id, day, complained) VALUES (NEW.project_id, CAST(unixepoch('subsec') * 1000 / 86400000 AS INTEGER), 1)
    ON CONFLICT (project_id, day) DO UPDATE SET complained = complained + 1;
END;
