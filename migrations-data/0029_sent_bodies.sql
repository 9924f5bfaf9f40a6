-- Issue 34: an email's HTML leaves D1 once it is sent. The send consumer writes a batch's
-- sent bodies (the HTML as sent: variables filled, tracking applied) as one R2 object under
-- bodies/<yyyy-mm-dd>/<object id>; the same statement that records SENT empties html (the
-- emails_bytes_update trigger of 0019 takes its bytes off projects.stored_bytes) and keeps
-- where the body is: "<key>#<offset>,<length>" (bytes of UTF-8). NULL: the HTML is in html
-- (QUEUED, SENDING, FAILED, or sent before this migration).
ALTER TABLE emails ADD COLUMN body_ref TEXT;
--> statement-breakpoint
-- QUOTA_R2_STORED_BYTES (projects.r2_stored_bytes, migration 0027): one more quota_checks name.
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
    WHEN NEW.quota = 'QUOTA_R2_STORED_BYTES' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_R2_STORED_BYTES')
    WHEN NEW.quota = 'QUOTA_PUBLIC_CONTACTS_PER_DAY' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_PUBLIC_CONTACTS_PER_DAY')
    WHEN NEW.quota = 'QUOTA_PUBLIC_EVENTS_PER_DAY' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_PUBLIC_EVENTS_PER_DAY')
    WHEN NEW.quota = 'QUOTA_TEMPLATES' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_TEMPLATES')
    WHEN NEW.quota = 'QUOTA_CAMPAIGNS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_CAMPAIGNS')
    WHEN NEW.quota = 'QUOTA_SEGMENTS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_SEGMENTS')
    WHEN NEW.quota = 'QUOTA_WORKFLOW_VERSIONS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_WORKFLOW_VERSIONS')
    ELSE RAISE(ABORT, 'QUOTA_EXCEEDED:UNKNOWN')
  END;
END;
