-- Custom SQL migration file, put your code below! --
-- Workflow triggers, caught where the rows are written so that every path that
-- records an event or creates or subscribes a contact (/v1/track, /contacts,
-- /v1/send, unsubscribe pages, workflows themselves, later features) starts
-- matching workflows. A row goes to workflow_trigger_outbox only when an
-- enabled workflow (or, for events, an execution of that contact waiting for
-- that event) wants it; the app drains the outbox into the workflow queue.
CREATE TRIGGER workflow_trigger_event AFTER INSERT ON events
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
