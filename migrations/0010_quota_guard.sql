-- Custom SQL migration file, put your code below! --
-- Quotas checked inside the write that would pass them: a batch inserts one
-- (quota, used, quota_limit) row per quota into quota_checks before its writes.
-- Within the quota the row is dropped (RAISE(IGNORE): the table stays empty);
-- past it the whole batch aborts and is rolled back with QUOTA_EXCEEDED:<quota>,
-- which the app turns into the quota's error (src/services/quotas.ts).
CREATE TRIGGER quota_checks_guard BEFORE INSERT ON quota_checks
BEGIN
  SELECT CASE
    WHEN NEW.used <= NEW.quota_limit THEN RAISE(IGNORE)
    WHEN NEW.quota = 'QUOTA_CONTACTS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_CONTACTS')
    WHEN NEW.quota = 'QUOTA_EVENTS_PER_DAY' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_EVENTS_PER_DAY')
    WHEN NEW.quota = 'QUOTA_EMAILS_PER_DAY' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_EMAILS_PER_DAY')
    WHEN NEW.quota = 'QUOTA_STORED_BYTES' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_STORED_BYTES')
    ELSE RAISE(ABORT, 'QUOTA_EXCEEDED:UNKNOWN')
  END;
END;
