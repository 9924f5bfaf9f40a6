-- Issue 38 (security review 3, W1-W5): event webhooks inside the tenant's limits.
-- W1: what a project grows in the webhook tables counts in projects.stored_bytes, kept by
-- triggers like 0019's: an event's payload, and per delivery 200 bytes (its ids and counters)
-- plus its last_error. Retention's deletes give the bytes back.
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
-- W4: each project's PENDING deliveries, counted by triggers, for WEBHOOK_PENDING_PER_PROJECT;
-- drained_at rotates the cron's paced drain over the projects.
CREATE TABLE `webhook_pending` (
	`project_id` text PRIMARY KEY NOT NULL,
	`pending` integer DEFAULT 0 NOT NULL,
	`drained_at` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_pending_drain_idx` ON `webhook_pending` (`drained_at`) WHERE pending > 0;
--> statement-breakpoint
INSERT INTO webhook_pending (project_id, pending) SELECT project_id, count(*) FROM webhook_deliveries WHERE status = 'PENDING' GROUP BY project_id;
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
-- W2/W4: claimed_at is set while an attempt runs (a claim older than its lease never reported:
-- the sweep counts it as a failed attempt); queued_at is when a message for the delivery was
-- last sent (NULL: it waits for the paced drain, e.g. over the per-minute cap).
ALTER TABLE `webhook_deliveries` ADD `claimed_at` integer;
--> statement-breakpoint
ALTER TABLE `webhook_deliveries` ADD `queued_at` integer;
--> statement-breakpoint
UPDATE webhook_deliveries SET queued_at = updated_at WHERE status = 'PENDING';
--> statement-breakpoint
DROP INDEX `webhook_deliveries_pending_idx`;
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_project_due_idx` ON `webhook_deliveries` (`project_id`,`next_attempt_at`) WHERE status = 'PENDING';
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_claimed_idx` ON `webhook_deliveries` (`claimed_at`) WHERE claimed_at IS NOT NULL;
--> statement-breakpoint
-- The per-minute cap is counted in the ProjectLimiter Durable Object now (atomic across invocations).
DROP TABLE `webhook_minute_usage`;
--> statement-breakpoint
-- W3: one endpoint per (project, normalised URL), the key written by the app (src/services/webhooks/url.ts).
-- Existing duplicates: the oldest enabled one (else the oldest) keeps the URL; the others are
-- disabled with a reason naming it and no key (enabling one again answers 409).
ALTER TABLE `webhook_endpoints` ADD `url_key` text;
--> statement-breakpoint
UPDATE webhook_endpoints SET url_key = (SELECT k.id FROM webhook_endpoints k WHERE k.project_id = webhook_endpoints.project_id AND k.url = webhook_endpoints.url
  ORDER BY k.enabled DESC, k.created_at, k.id LIMIT 1);
--> statement-breakpoint
UPDATE webhook_endpoints SET enabled = 0, disabled_reason = 'Another endpoint of this project has the same URL (' || url_key || '); one endpoint per URL', url_key = NULL
  WHERE url_key != id;
--> statement-breakpoint
UPDATE webhook_endpoints SET url_key = url WHERE url_key IS NOT NULL;
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_endpoints_project_url_uq` ON `webhook_endpoints` (`project_id`,`url_key`);
--> statement-breakpoint
-- What exists already, added to the projects' figures.
UPDATE projects SET stored_bytes = stored_bytes
  + coalesce((SELECT sum(length(CAST(payload AS BLOB))) FROM webhook_events WHERE project_id = projects.id), 0)
  + coalesce((SELECT sum(200 + coalesce(length(CAST(last_error AS BLOB)), 0)) FROM webhook_deliveries WHERE project_id = projects.id), 0);
