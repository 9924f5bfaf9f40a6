-- The data tables of a data shard (SHARD_1 … SHARD_n), as migrations/0000-0027 left them on DB:
-- every table, index and trigger except the control tables (api_keys, domains, domain_releases;
-- project_shards comes later), with a projects row per project placed on the shard (its data-side
-- state). Later data migrations are mirrored here under their migrations/ number; DB (control and
-- shard 0) keeps its own history in migrations/. test/db/shards.schema.test.ts compares the two.
CREATE TABLE `contacts` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`email` text NOT NULL,
	`subscribed` integer DEFAULT true NOT NULL,
	`data` text DEFAULT '{}' NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `events` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`contact_id` text,
	`name` text NOT NULL,
	`data` text DEFAULT '{}' NOT NULL,
	`email_id` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL, `source` text DEFAULT 'system' NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `projects` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`disabled` integer DEFAULT false NOT NULL,
	`tracking_enabled` integer DEFAULT true NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
, `stored_bytes` integer DEFAULT 0 NOT NULL, `double_opt_in` integer DEFAULT false NOT NULL, `double_opt_in_template_id` text, `sending_paused_at` integer, `sending_paused_reason` text, `sending_resumed_at` integer, r2_stored_bytes INTEGER NOT NULL DEFAULT 0);
--> statement-breakpoint
CREATE TABLE `templates` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`subject` text NOT NULL,
	`body` text NOT NULL,
	`type` text NOT NULL,
	`from_address` text,
	`from_name` text,
	`reply_to` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `blob_chunks` (
	`blob_id` text NOT NULL,
	`seq` integer NOT NULL,
	`data` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `captured_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`email_id` text NOT NULL,
	`project_id` text NOT NULL,
	`from_address` text NOT NULL,
	`to_address` text NOT NULL,
	`subject` text NOT NULL,
	`size` integer NOT NULL,
	`blob_id` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `email_attachments` (
	`id` text PRIMARY KEY NOT NULL,
	`send_id` text NOT NULL,
	`position` integer NOT NULL,
	`filename` text NOT NULL,
	`content_type` text NOT NULL,
	`size` integer NOT NULL,
	`blob_id` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `emails` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`contact_id` text,
	`send_id` text NOT NULL,
	`template_id` text,
	`campaign_id` text,
	`from_address` text NOT NULL,
	`from_name` text,
	`to_address` text NOT NULL,
	`to_name` text,
	`reply_to` text,
	`subject` text NOT NULL,
	`html` text NOT NULL,
	`headers` text DEFAULT '{}' NOT NULL,
	`marketing` integer DEFAULT false NOT NULL,
	`has_attachments` integer DEFAULT false NOT NULL,
	`status` text DEFAULT 'QUEUED' NOT NULL,
	`error` text,
	`message_id` text NOT NULL,
	`provider_message_id` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`opens` integer DEFAULT 0 NOT NULL,
	`clicks` integer DEFAULT 0 NOT NULL,
	`queued_at` integer,
	`sending_at` integer,
	`sent_at` integer,
	`delivered_at` integer,
	`opened_at` integer,
	`clicked_at` integer,
	`bounced_at` integer,
	`complained_at` integer,
	`failed_at` integer,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL, `last_opened_at` integer, `last_clicked_at` integer, `tracked` integer DEFAULT true NOT NULL, `bulk` integer DEFAULT false NOT NULL, `retry_at` integer,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE TABLE `idempotency_keys` (
	`project_id` text NOT NULL,
	`key` text NOT NULL,
	`request_hash` text NOT NULL,
	`send_id` text NOT NULL,
	`response` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `suppressions` (
	`project_id` text NOT NULL,
	`email` text NOT NULL,
	`reason` text NOT NULL,
	`detail` text,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
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
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL, `allow_public_events` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `campaigns` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`subject` text NOT NULL,
	`body` text NOT NULL,
	`from_address` text NOT NULL,
	`from_name` text,
	`reply_to` text,
	`audience_type` text NOT NULL,
	`segment_id` text,
	`audience_filter` text,
	`status` text DEFAULT 'DRAFT' NOT NULL,
	`scheduled_at` integer,
	`sent_at` integer,
	`started_at` integer,
	`send_condition` text,
	`audience_upper_id` text,
	`send_cursor` text,
	`audience_done` integer DEFAULT false NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `segments` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`condition` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `quota_checks` (
	`quota` text NOT NULL,
	`used` integer NOT NULL,
	`quota_limit` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `project_daily_usage` (
	`project_id` text NOT NULL,
	`day` integer NOT NULL,
	`events` integer DEFAULT 0 NOT NULL,
	`emails` integer DEFAULT 0 NOT NULL, `public_contacts` integer DEFAULT 0 NOT NULL, `public_events` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`project_id`, `day`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `project_usage` (
	`project_id` text PRIMARY KEY NOT NULL,
	`contacts` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
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
	`finished_at` integer, `failure_reason` text, `progress_at` integer DEFAULT 0 NOT NULL, `resume_row` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`webhook_id` text NOT NULL,
	`event_id` text NOT NULL,
	`type` text NOT NULL,
	`status` text DEFAULT 'PENDING' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_status_code` integer,
	`last_error` text,
	`next_attempt_at` integer,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
, `claimed_at` integer, `queued_at` integer);
--> statement-breakpoint
CREATE TABLE `webhook_endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`url` text NOT NULL,
	`events` text DEFAULT '[]' NOT NULL,
	`description` text,
	`enabled` integer DEFAULT true NOT NULL,
	`disabled_reason` text,
	`secret_encrypted` text NOT NULL,
	`previous_secret_encrypted` text,
	`previous_secret_expires_at` integer,
	`failing_since` integer,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	`updated_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL, `url_key` text,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `webhook_events` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`type` text NOT NULL,
	`payload` text NOT NULL,
	`fanned_out` integer DEFAULT false NOT NULL,
	`queued_at` integer,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL
);
--> statement-breakpoint
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
CREATE TABLE `send_headers` (
	`send_id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`headers` text NOT NULL,
	`created_at` integer DEFAULT (unixepoch('subsec') * 1000) NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `webhook_pending` (
	`project_id` text PRIMARY KEY NOT NULL,
	`pending` integer DEFAULT 0 NOT NULL,
	`drained_at` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE r2_usage (
  project_id TEXT NOT NULL,
  prefix TEXT NOT NULL,
  day INTEGER NOT NULL,
  bytes INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, prefix, day)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE UNIQUE INDEX `contacts_project_email_uq` ON `contacts` (`project_id`,`email`);
--> statement-breakpoint
CREATE INDEX `contacts_project_id_idx` ON `contacts` (`project_id`,`id`);
--> statement-breakpoint
CREATE INDEX `contacts_project_subscribed_id_idx` ON `contacts` (`project_id`,`subscribed`,`id`);
--> statement-breakpoint
CREATE INDEX `events_project_id_idx` ON `events` (`project_id`,`id`);
--> statement-breakpoint
CREATE INDEX `events_project_name_id_idx` ON `events` (`project_id`,`name`,`id`);
--> statement-breakpoint
CREATE INDEX `events_contact_id_idx` ON `events` (`contact_id`,`id`);
--> statement-breakpoint
CREATE INDEX `templates_project_id_idx` ON `templates` (`project_id`,`id`);
--> statement-breakpoint
CREATE UNIQUE INDEX `blob_chunks_pk` ON `blob_chunks` (`blob_id`,`seq`);
--> statement-breakpoint
CREATE INDEX `email_attachments_send_idx` ON `email_attachments` (`send_id`,`position`);
--> statement-breakpoint
CREATE INDEX `emails_project_id_idx` ON `emails` (`project_id`,`id`);
--> statement-breakpoint
CREATE INDEX `emails_project_status_id_idx` ON `emails` (`project_id`,`status`,`id`);
--> statement-breakpoint
CREATE INDEX `emails_contact_id_idx` ON `emails` (`contact_id`,`id`);
--> statement-breakpoint
CREATE INDEX `emails_send_idx` ON `emails` (`send_id`);
--> statement-breakpoint
CREATE INDEX `emails_status_updated_idx` ON `emails` (`status`,`updated_at`);
--> statement-breakpoint
CREATE UNIQUE INDEX `idempotency_keys_pk` ON `idempotency_keys` (`project_id`,`key`);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_created_idx` ON `idempotency_keys` (`created_at`);
--> statement-breakpoint
CREATE UNIQUE INDEX `suppressions_pk` ON `suppressions` (`project_id`,`email`);
--> statement-breakpoint
CREATE INDEX `emails_html_kept_idx` ON `emails` (`id`) WHERE html != '';
--> statement-breakpoint
CREATE UNIQUE INDEX `workflow_executions_trigger_uq` ON `workflow_executions` (`workflow_id`,`trigger_key`);
--> statement-breakpoint
CREATE INDEX `workflow_executions_workflow_id_idx` ON `workflow_executions` (`workflow_id`,`id`);
--> statement-breakpoint
CREATE INDEX `workflow_executions_workflow_status_id_idx` ON `workflow_executions` (`workflow_id`,`status`,`id`);
--> statement-breakpoint
CREATE INDEX `workflow_executions_workflow_contact_id_idx` ON `workflow_executions` (`workflow_id`,`contact_id`,`id`);
--> statement-breakpoint
CREATE INDEX `workflow_executions_contact_waiting_idx` ON `workflow_executions` (`contact_id`,`waiting_event`,`status`);
--> statement-breakpoint
CREATE INDEX `workflow_trigger_outbox_project_idx` ON `workflow_trigger_outbox` (`project_id`,`id`);
--> statement-breakpoint
CREATE UNIQUE INDEX `workflow_versions_pk` ON `workflow_versions` (`workflow_id`,`version`);
--> statement-breakpoint
CREATE INDEX `workflows_project_id_idx` ON `workflows` (`project_id`,`id`);
--> statement-breakpoint
CREATE INDEX `workflows_project_trigger_idx` ON `workflows` (`project_id`,`trigger_type`,`trigger_event`,`enabled`);
--> statement-breakpoint
CREATE INDEX `campaigns_project_id_idx` ON `campaigns` (`project_id`,`id`);
--> statement-breakpoint
CREATE INDEX `campaigns_project_status_id_idx` ON `campaigns` (`project_id`,`status`,`id`);
--> statement-breakpoint
CREATE INDEX `campaigns_status_scheduled_idx` ON `campaigns` (`status`,`scheduled_at`);
--> statement-breakpoint
CREATE INDEX `campaigns_segment_idx` ON `campaigns` (`segment_id`);
--> statement-breakpoint
CREATE INDEX `segments_project_id_idx` ON `segments` (`project_id`,`id`);
--> statement-breakpoint
CREATE INDEX `events_contact_name_created_idx` ON `events` (`contact_id`,`name`,`created_at`);
--> statement-breakpoint
CREATE INDEX `project_daily_usage_day_idx` ON `project_daily_usage` (`day`);
--> statement-breakpoint
CREATE INDEX `emails_provider_message_idx` ON `emails` (`provider_message_id`) WHERE provider_message_id IS NOT NULL;
--> statement-breakpoint
CREATE UNIQUE INDEX `emails_campaign_contact_uq` ON `emails` (`campaign_id`,`contact_id`) WHERE campaign_id IS NOT NULL;
--> statement-breakpoint
CREATE INDEX `emails_campaign_status_idx` ON `emails` (`campaign_id`,`status`) WHERE campaign_id IS NOT NULL;
--> statement-breakpoint
CREATE INDEX `emails_project_campaign_id_idx` ON `emails` (`project_id`,`campaign_id`,`id`) WHERE campaign_id IS NOT NULL;
--> statement-breakpoint
CREATE INDEX `contact_import_rows_row_idx` ON `contact_import_rows` (`import_id`,`row`);
--> statement-breakpoint
CREATE INDEX `contact_imports_project_id_idx` ON `contact_imports` (`project_id`,`id`);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_webhook_event_uq` ON `webhook_deliveries` (`webhook_id`,`event_id`);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_webhook_id_idx` ON `webhook_deliveries` (`webhook_id`,`id`);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_webhook_status_id_idx` ON `webhook_deliveries` (`webhook_id`,`status`,`id`);
--> statement-breakpoint
CREATE INDEX `webhook_endpoints_project_id_idx` ON `webhook_endpoints` (`project_id`,`id`);
--> statement-breakpoint
CREATE INDEX `webhook_endpoints_project_enabled_idx` ON `webhook_endpoints` (`project_id`,`enabled`);
--> statement-breakpoint
CREATE INDEX `webhook_events_outbox_idx` ON `webhook_events` (`queued_at`,`id`) WHERE fanned_out = 0;
--> statement-breakpoint
CREATE INDEX `workflow_executions_project_status_idx` ON `workflow_executions` (`project_id`,`status`);
--> statement-breakpoint
CREATE INDEX `project_reputation_day_idx` ON `project_reputation` (`day`);
--> statement-breakpoint
CREATE INDEX `webhook_pending_drain_idx` ON `webhook_pending` (`drained_at`) WHERE pending > 0;
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_project_due_idx` ON `webhook_deliveries` (`project_id`,`next_attempt_at`) WHERE status = 'PENDING';
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_claimed_idx` ON `webhook_deliveries` (`claimed_at`) WHERE claimed_at IS NOT NULL;
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_endpoints_project_url_uq` ON `webhook_endpoints` (`project_id`,`url_key`);
--> statement-breakpoint
CREATE INDEX `contact_imports_open_idx` ON `contact_imports` (`project_id`) WHERE status IN ('PENDING', 'PROCESSING');
--> statement-breakpoint
CREATE INDEX `contact_imports_progress_idx` ON `contact_imports` (`progress_at`) WHERE status IN ('PENDING', 'PROCESSING');
--> statement-breakpoint
CREATE INDEX r2_usage_prefix_day ON r2_usage (prefix, day);
--> statement-breakpoint
CREATE TRIGGER contacts_data_cap_insert BEFORE INSERT ON contacts
WHEN length(CAST(NEW.data AS BLOB)) > 65536
BEGIN
  SELECT RAISE(ABORT, 'CONTACT_DATA_TOO_LARGE');
END;
--> statement-breakpoint
CREATE TRIGGER contacts_data_cap_update BEFORE UPDATE OF data ON contacts
WHEN length(CAST(NEW.data AS BLOB)) > 65536
BEGIN
  SELECT RAISE(ABORT, 'CONTACT_DATA_TOO_LARGE');
END;
--> statement-breakpoint
CREATE TRIGGER workflow_trigger_contact_insert AFTER INSERT ON contacts
WHEN EXISTS (SELECT 1 FROM workflows WHERE project_id = NEW.project_id AND enabled = 1 AND deleted_at IS NULL
             AND (trigger_type = 'CONTACT_CREATED' OR (trigger_type = 'CONTACT_SUBSCRIBED' AND NEW.subscribed = 1)))
BEGIN
  INSERT INTO workflow_trigger_outbox (project_id, contact_id, kind, created_at)
  SELECT NEW.project_id, NEW.id, 'CONTACT_CREATED', CAST(unixepoch('subsec') * 1000 AS INTEGER)
  WHERE EXISTS (SELECT 1 FROM workflows WHERE project_id = NEW.project_id AND enabled = 1 AND deleted_at IS NULL
                AND trigger_type = 'CONTACT_CREATED');
  INSERT INTO workflow_trigger_outbox (project_id, contact_id, kind, created_at)
  SELECT NEW.project_id, NEW.id, 'CONTACT_SUBSCRIBED', CAST(unixepoch('subsec') * 1000 AS INTEGER)
  WHERE NEW.subscribed = 1 AND EXISTS (SELECT 1 FROM workflows WHERE project_id = NEW.project_id AND enabled = 1
                AND deleted_at IS NULL AND trigger_type = 'CONTACT_SUBSCRIBED');
END;
--> statement-breakpoint
CREATE TRIGGER workflow_trigger_contact_subscribed AFTER UPDATE OF subscribed ON contacts
WHEN OLD.subscribed = 0 AND NEW.subscribed = 1
  AND EXISTS (SELECT 1 FROM workflows WHERE project_id = NEW.project_id AND enabled = 1 AND deleted_at IS NULL
              AND trigger_type = 'CONTACT_SUBSCRIBED')
BEGIN
  INSERT INTO workflow_trigger_outbox (project_id, contact_id, kind, created_at)
  VALUES (NEW.project_id, NEW.id, 'CONTACT_SUBSCRIBED', CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;
--> statement-breakpoint
CREATE TRIGGER contacts_usage_insert AFTER INSERT ON contacts
BEGIN
  INSERT INTO project_usage (project_id, contacts) VALUES (NEW.project_id, 1)
    ON CONFLICT (project_id) DO UPDATE SET contacts = contacts + 1;
END;
--> statement-breakpoint
CREATE TRIGGER contacts_usage_delete AFTER DELETE ON contacts
BEGIN
  UPDATE project_usage SET contacts = max(0, contacts - 1) WHERE project_id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER emails_usage_insert AFTER INSERT ON emails
BEGIN
  INSERT INTO project_daily_usage (project_id, day, emails) VALUES (NEW.project_id, CAST(NEW.created_at / 86400000 AS INTEGER), 1)
    ON CONFLICT (project_id, day) DO UPDATE SET emails = emails + 1;
END;
--> statement-breakpoint
CREATE TRIGGER emails_bytes_insert AFTER INSERT ON emails
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.html AS BLOB)) + length(CAST(NEW.headers AS BLOB)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER emails_bytes_update AFTER UPDATE OF html, headers ON emails
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.html AS BLOB)) + length(CAST(NEW.headers AS BLOB))
    - length(CAST(OLD.html AS BLOB)) - length(CAST(OLD.headers AS BLOB))) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER emails_bytes_delete AFTER DELETE ON emails
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.html AS BLOB)) - length(CAST(OLD.headers AS BLOB))) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER email_attachments_bytes_insert AFTER INSERT ON email_attachments
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + NEW.size WHERE id = (SELECT project_id FROM emails WHERE send_id = NEW.send_id LIMIT 1);
END;
--> statement-breakpoint
CREATE TRIGGER email_attachments_bytes_delete AFTER DELETE ON email_attachments
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - OLD.size) WHERE id = (SELECT project_id FROM emails WHERE send_id = OLD.send_id LIMIT 1);
END;
--> statement-breakpoint
CREATE TRIGGER events_bytes_insert AFTER INSERT ON events
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.data AS BLOB)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER events_bytes_delete AFTER DELETE ON events
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.data AS BLOB))) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER contacts_bytes_insert AFTER INSERT ON contacts
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.data AS BLOB)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER contacts_bytes_update AFTER UPDATE OF data ON contacts WHEN OLD.data IS NOT NEW.data
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.data AS BLOB)) - length(CAST(OLD.data AS BLOB))) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER contacts_bytes_delete AFTER DELETE ON contacts
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.data AS BLOB))) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER templates_bytes_insert AFTER INSERT ON templates
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.subject AS BLOB)) + length(CAST(NEW.body AS BLOB)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER templates_bytes_update AFTER UPDATE OF subject, body ON templates
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.subject AS BLOB)) + length(CAST(NEW.body AS BLOB))
    - length(CAST(OLD.subject AS BLOB)) - length(CAST(OLD.body AS BLOB))) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER templates_bytes_delete AFTER DELETE ON templates
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.subject AS BLOB)) - length(CAST(OLD.body AS BLOB))) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER campaigns_bytes_insert AFTER INSERT ON campaigns
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.subject AS BLOB)) + length(CAST(NEW.body AS BLOB)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER campaigns_bytes_update AFTER UPDATE OF subject, body ON campaigns
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.subject AS BLOB)) + length(CAST(NEW.body AS BLOB))
    - length(CAST(OLD.subject AS BLOB)) - length(CAST(OLD.body AS BLOB))) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER campaigns_bytes_delete AFTER DELETE ON campaigns
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.subject AS BLOB)) - length(CAST(OLD.body AS BLOB))) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER workflow_versions_bytes_insert AFTER INSERT ON workflow_versions
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.steps AS BLOB)) WHERE id = (SELECT project_id FROM workflows WHERE id = NEW.workflow_id);
END;
--> statement-breakpoint
CREATE TRIGGER workflow_versions_bytes_delete AFTER DELETE ON workflow_versions
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.steps AS BLOB))) WHERE id = (SELECT project_id FROM workflows WHERE id = OLD.workflow_id);
END;
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
    WHEN NEW.quota = 'QUOTA_TEMPLATES' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_TEMPLATES')
    WHEN NEW.quota = 'QUOTA_CAMPAIGNS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_CAMPAIGNS')
    WHEN NEW.quota = 'QUOTA_SEGMENTS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_SEGMENTS')
    WHEN NEW.quota = 'QUOTA_WORKFLOW_VERSIONS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_WORKFLOW_VERSIONS')
    ELSE RAISE(ABORT, 'QUOTA_EXCEEDED:UNKNOWN')
  END;
END;
--> statement-breakpoint
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
--> statement-breakpoint
CREATE TRIGGER send_headers_bytes_insert AFTER INSERT ON send_headers
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.headers AS BLOB)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER send_headers_bytes_delete AFTER DELETE ON send_headers
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.headers AS BLOB))) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER emails_send_headers_delete AFTER DELETE ON emails
BEGIN
  DELETE FROM send_headers WHERE send_id = OLD.send_id AND NOT EXISTS (SELECT 1 FROM emails WHERE send_id = OLD.send_id);
END;
--> statement-breakpoint
CREATE TRIGGER events_usage_insert AFTER INSERT ON events
BEGIN
  INSERT INTO project_daily_usage (project_id, day, events, public_events, public_contacts)
    VALUES (NEW.project_id, CAST(NEW.created_at / 86400000 AS INTEGER), 1,
      NEW.source = 'public', NEW.source = 'public' AND NEW.contact_id IS NEW.id)
    ON CONFLICT (project_id, day) DO UPDATE SET events = events + 1,
      public_events = public_events + excluded.public_events,
      public_contacts = public_contacts + excluded.public_contacts;
END;
--> statement-breakpoint
CREATE TRIGGER workflow_trigger_event BEFORE INSERT ON events
WHEN NEW.contact_id IS NOT NULL AND (
  EXISTS (SELECT 1 FROM workflows WHERE project_id = NEW.project_id AND trigger_type = 'EVENT'
          AND trigger_event = NEW.name AND enabled = 1 AND deleted_at IS NULL)
  OR EXISTS (SELECT 1 FROM workflow_executions WHERE contact_id = NEW.contact_id
          AND waiting_event = NEW.name AND status = 'WAITING')
)
BEGIN
  INSERT INTO workflow_trigger_outbox (project_id, contact_id, kind, event_name, event_id, created_at)
  VALUES (NEW.project_id, NEW.contact_id, 'EVENT', NEW.name, NEW.id, CAST(unixepoch('subsec') * 1000 AS INTEGER));
END;
--> statement-breakpoint
CREATE TRIGGER webhook_events_bytes_insert AFTER INSERT ON webhook_events
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.payload AS BLOB)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER webhook_events_bytes_update AFTER UPDATE OF payload ON webhook_events WHEN OLD.payload IS NOT NEW.payload
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.payload AS BLOB)) - length(CAST(OLD.payload AS BLOB))) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER webhook_events_bytes_delete AFTER DELETE ON webhook_events
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.payload AS BLOB))) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_bytes_insert AFTER INSERT ON webhook_deliveries
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + 200 + coalesce(length(CAST(NEW.last_error AS BLOB)), 0) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_bytes_update AFTER UPDATE OF last_error ON webhook_deliveries WHEN OLD.last_error IS NOT NEW.last_error
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + coalesce(length(CAST(NEW.last_error AS BLOB)), 0)
    - coalesce(length(CAST(OLD.last_error AS BLOB)), 0)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_bytes_delete AFTER DELETE ON webhook_deliveries
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - 200 - coalesce(length(CAST(OLD.last_error AS BLOB)), 0)) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_pending_insert AFTER INSERT ON webhook_deliveries WHEN NEW.status = 'PENDING'
BEGIN
  INSERT INTO webhook_pending (project_id, pending) VALUES (NEW.project_id, 1)
    ON CONFLICT (project_id) DO UPDATE SET pending = pending + 1;
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_pending_update AFTER UPDATE OF status ON webhook_deliveries
WHEN (OLD.status = 'PENDING') != (NEW.status = 'PENDING')
BEGIN
  INSERT INTO webhook_pending (project_id, pending) VALUES (NEW.project_id, CASE WHEN NEW.status = 'PENDING' THEN 1 ELSE 0 END)
    ON CONFLICT (project_id) DO UPDATE SET pending = max(0, pending + CASE WHEN NEW.status = 'PENDING' THEN 1 ELSE -1 END);
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_pending_delete AFTER DELETE ON webhook_deliveries WHEN OLD.status = 'PENDING'
BEGIN
  UPDATE webhook_pending SET pending = max(0, pending - 1) WHERE project_id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER contact_import_rows_bytes_insert AFTER INSERT ON contact_import_rows
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.cells AS BLOB)) + length(CAST(NEW.email_key AS BLOB))
    WHERE id = (SELECT project_id FROM contact_imports WHERE id = NEW.import_id);
END;
--> statement-breakpoint
CREATE TRIGGER contact_import_rows_bytes_update AFTER UPDATE OF cells ON contact_import_rows
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.cells AS BLOB)) - length(CAST(OLD.cells AS BLOB)))
    WHERE id = (SELECT project_id FROM contact_imports WHERE id = NEW.import_id);
END;
--> statement-breakpoint
CREATE TRIGGER contact_import_rows_bytes_delete AFTER DELETE ON contact_import_rows
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.cells AS BLOB)) - length(CAST(OLD.email_key AS BLOB)))
    WHERE id = (SELECT project_id FROM contact_imports WHERE id = OLD.import_id);
END;
--> statement-breakpoint
CREATE TRIGGER contact_imports_bytes_insert AFTER INSERT ON contact_imports
BEGIN
  UPDATE projects SET stored_bytes = stored_bytes + length(CAST(NEW.columns AS BLOB)) + length(CAST(NEW.errors AS BLOB))
    + coalesce(length(CAST(NEW.failure_reason AS BLOB)), 0) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER contact_imports_bytes_update AFTER UPDATE OF errors, failure_reason ON contact_imports
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes + length(CAST(NEW.errors AS BLOB)) + coalesce(length(CAST(NEW.failure_reason AS BLOB)), 0)
    - length(CAST(OLD.errors AS BLOB)) - coalesce(length(CAST(OLD.failure_reason AS BLOB)), 0)) WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER contact_imports_bytes_delete AFTER DELETE ON contact_imports
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes - length(CAST(OLD.columns AS BLOB)) - length(CAST(OLD.errors AS BLOB))
    - coalesce(length(CAST(OLD.failure_reason AS BLOB)), 0)) WHERE id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER r2_usage_insert AFTER INSERT ON r2_usage
BEGIN
  UPDATE projects SET r2_stored_bytes = r2_stored_bytes + NEW.bytes WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER r2_usage_update AFTER UPDATE OF bytes ON r2_usage
BEGIN
  UPDATE projects SET r2_stored_bytes = r2_stored_bytes + NEW.bytes - OLD.bytes WHERE id = NEW.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER r2_usage_delete AFTER DELETE ON r2_usage
BEGIN
  UPDATE projects SET r2_stored_bytes = r2_stored_bytes - OLD.bytes WHERE id = OLD.project_id;
END;
