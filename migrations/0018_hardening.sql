-- Issue 24 part B: events.source, workflows.allow_public_events, the public key's daily counters and quota guard names.
ALTER TABLE `events` ADD `source` text DEFAULT 'system' NOT NULL;--> statement-breakpoint
ALTER TABLE `project_daily_usage` ADD `public_contacts` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `project_daily_usage` ADD `public_events` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `workflows` ADD `allow_public_events` integer DEFAULT false NOT NULL;--> statement-breakpoint
-- A public key's (pk_) daily quotas of new contacts and events (src/store/guards.ts): two more quota_checks names.
DROP TRIGGER quota_checks_guard;
--> statement-breakpoint
CREATE TRIGGER quota_checks_guard BEFORE INSERT ON quota_checks
BEGIN
  SELECT CASE
    WHEN NEW.used <= NEW.quota_limit THEN RAISE(IGNORE)
    WHEN NEW.quota = 'SUPPRESSED_RECIPIENTS' THEN RAISE(ABORT, 'SEND_HAS_SUPPRESSED_RECIPIENTS')
    WHEN NEW.quota = 'QUOTA_CONTACTS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_CONTACTS')
    WHEN NEW.quota = 'QUOTA_EVENTS_PER_DAY' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_EVENTS_PER_DAY')
    WHEN NEW.quota = 'QUOTA_EMAILS_PER_DAY' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_EMAILS_PER_DAY')
    WHEN NEW.quota = 'QUOTA_STORED_BYTES' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_STORED_BYTES')
    WHEN NEW.quota = 'QUOTA_PUBLIC_CONTACTS_PER_DAY' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_PUBLIC_CONTACTS_PER_DAY')
    WHEN NEW.quota = 'QUOTA_PUBLIC_EVENTS_PER_DAY' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_PUBLIC_EVENTS_PER_DAY')
    ELSE RAISE(ABORT, 'QUOTA_EXCEEDED:UNKNOWN')
  END;
END;
