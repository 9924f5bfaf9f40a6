-- Custom SQL migration file, put your code below! ---- POST /v1/send skips its reads when nothing it renders depends on stored data
-- (src/services/send/accept.ts): its write batch then checks the recipients'
-- suppressions itself, first, with a quota_checks row
-- ('SUPPRESSED_RECIPIENTS', how many are suppressed, 0). Any suppressed
-- recipient aborts the batch with SEND_HAS_SUPPRESSED_RECIPIENTS, nothing is
-- written, and the send takes the reading path, which lists them.
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
    ELSE RAISE(ABORT, 'QUOTA_EXCEEDED:UNKNOWN')
  END;
END;
