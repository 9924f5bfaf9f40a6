-- Custom SQL migration file, put your code below! --
-- Issue 24 H1: projects.stored_bytes kept by the database on every insert,
-- update and delete of what a project stores (bytes, UTF-8): email html and
-- headers, attachments (decoded size), event and contact data, template and
-- campaign subject and body, workflow version steps. The write batches check
-- it with a last quota_checks row (src/store/guards.ts storedBytesGuard).
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
-- Attachments hang off the send; its emails (inserted first in the same batch) name the project.
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
-- The workflows row holds a copy of the current version's steps: counted once, through its version.
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
-- The count caps (src/store/guards.ts countGuard): four more quota_checks names.
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
    WHEN NEW.quota = 'QUOTA_TEMPLATES' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_TEMPLATES')
    WHEN NEW.quota = 'QUOTA_CAMPAIGNS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_CAMPAIGNS')
    WHEN NEW.quota = 'QUOTA_SEGMENTS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_SEGMENTS')
    WHEN NEW.quota = 'QUOTA_WORKFLOW_VERSIONS' THEN RAISE(ABORT, 'QUOTA_EXCEEDED:QUOTA_WORKFLOW_VERSIONS')
    ELSE RAISE(ABORT, 'QUOTA_EXCEEDED:UNKNOWN')
  END;
END;
--> statement-breakpoint
-- What exists already, recounted from the rows (the application's count covered html and attachments only).
UPDATE projects SET stored_bytes =
    coalesce((SELECT sum(length(CAST(html AS BLOB)) + length(CAST(headers AS BLOB))) FROM emails WHERE project_id = projects.id), 0)
  + coalesce((SELECT sum(a.size) FROM email_attachments a WHERE (SELECT project_id FROM emails e WHERE e.send_id = a.send_id LIMIT 1) = projects.id), 0)
  + coalesce((SELECT sum(length(CAST(data AS BLOB))) FROM events WHERE project_id = projects.id), 0)
  + coalesce((SELECT sum(length(CAST(data AS BLOB))) FROM contacts WHERE project_id = projects.id), 0)
  + coalesce((SELECT sum(length(CAST(subject AS BLOB)) + length(CAST(body AS BLOB))) FROM templates WHERE project_id = projects.id), 0)
  + coalesce((SELECT sum(length(CAST(subject AS BLOB)) + length(CAST(body AS BLOB))) FROM campaigns WHERE project_id = projects.id), 0)
  + coalesce((SELECT sum(length(CAST(v.steps AS BLOB))) FROM workflow_versions v JOIN workflows w ON w.id = v.workflow_id WHERE w.project_id = projects.id), 0);
