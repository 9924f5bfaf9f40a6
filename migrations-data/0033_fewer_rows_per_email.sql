-- Issue 34: fewer D1 rows written per email (test/store/rows-written.test.ts).
--
-- A status filter of GET /emails reads (project_id, status, id) only for final statuses:
-- QUEUED and SENDING mail is found through emails_pending_idx (status, updated_at), which
-- indexes exactly those two, and listEmails carries the matching term. So an accepted
-- email and its claim (QUEUED -> SENDING) write no entry here; it enters at its outcome.
DROP INDEX `emails_project_status_id_idx`;--> statement-breakpoint
CREATE INDEX `emails_project_status_id_idx` ON `emails` (`project_id`,`status`,`id`) WHERE status NOT IN ('QUEUED', 'SENDING');--> statement-breakpoint
-- A campaign's (campaign_id, status) is read only to ask whether any of its mail is still
-- QUEUED or SENDING (finishing it, campaign.sent); the stats read the rows. Indexed only
-- while pending: DELIVERED, OPENED and CLICKED write no entry here.
DROP INDEX `emails_campaign_status_idx`;--> statement-breakpoint
CREATE INDEX `emails_campaign_pending_idx` ON `emails` (`campaign_id`,`status`) WHERE campaign_id IS NOT NULL AND status IN ('QUEUED', 'SENDING');
--> statement-breakpoint
-- The day's email count and the stored bytes of new mail are added once per insert statement
-- (store/emails.ts insertQueued: COUNT_QUEUED_SQL, QUEUED_BYTES_SQL), not by a trigger per row.
DROP TRIGGER `emails_usage_insert`;--> statement-breakpoint
DROP TRIGGER `emails_bytes_insert`;--> statement-breakpoint
-- The reputation's sent count: once per outcome statement (recordOutcomes) and per reconcile, not per row.
DROP TRIGGER `emails_reputation_sent`;--> statement-breakpoint
-- A sent email's HTML leaving for R2 (html emptied as body_ref is set) is taken off the stored bytes
-- by its outcome statement, once per project and batch; every other change of html or headers here.
DROP TRIGGER `emails_bytes_update`;--> statement-breakpoint
CREATE TRIGGER emails_bytes_update AFTER UPDATE OF html, headers ON emails
  WHEN (OLD.html IS NOT NEW.html OR OLD.headers IS NOT NEW.headers)
    AND NOT (NEW.html = '' AND OLD.body_ref IS NULL AND NEW.body_ref IS NOT NULL)
BEGIN
  UPDATE projects SET stored_bytes = max(0, stored_bytes
    + length(CAST(NEW.html AS BLOB)) + CASE NEW.headers WHEN '{}' THEN 0 ELSE length(CAST(NEW.headers AS BLOB)) END
    - length(CAST(OLD.html AS BLOB)) - CASE OLD.headers WHEN '{}' THEN 0 ELSE length(CAST(OLD.headers AS BLOB)) END) WHERE id = NEW.project_id;
END;
