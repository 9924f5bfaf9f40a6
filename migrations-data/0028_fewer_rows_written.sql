-- Issue 34: fewer D1 rows written per email. D1 bills every row it writes, and an UPDATE
-- rewrites the entry of every index whose columns (or partial-index condition) it sets;
-- an INSERT writes one entry per index. Measured with meta.rows_written
-- (test/store/rows-written.test.ts; docs/performance.md "Rows written per email").
--
-- The stuck-mail sweep is the only reader of (status, updated_at), and only for QUEUED
-- and SENDING mail: indexed only while an email is QUEUED or SENDING, so the
-- DELIVERED, OPENED and CLICKED updates (which set status and updated_at) write no
-- entry here. Its queries carry `status IN ('QUEUED', 'SENDING')` so SQLite uses it.
DROP INDEX `emails_status_updated_idx`;--> statement-breakpoint
CREATE INDEX `emails_pending_idx` ON `emails` (`status`,`updated_at`) WHERE status IN ('QUEUED', 'SENDING');--> statement-breakpoint
-- The HTML retention reads only final emails (dropOldHtml's query has both terms): a
-- QUEUED or SENDING email is no longer indexed here, and one sent with its HTML moved
-- to R2 (html = '') never is; only a FAILED email (or one sent before migration 0029)
-- waits here for its HTML to be dropped.
DROP INDEX `emails_html_kept_idx`;--> statement-breakpoint
CREATE INDEX `emails_html_kept_idx` ON `emails` (`id`) WHERE html != '' AND status NOT IN ('QUEUED', 'SENDING');--> statement-breakpoint
-- (contact_id, name, created_at) serves every lookup by contact (conditions, activity,
-- the contact's events list, the cascade on contact deletion): (contact_id, id) only
-- saved the contact's events list a sort by id, at one entry per event.
DROP INDEX `events_contact_id_idx`;
