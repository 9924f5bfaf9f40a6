-- Issue 24: fewer statements per /v1/track. A public key's daily counters kept by the events trigger that
-- already counts the day's events, in place of a statement in every pk_
-- /v1/track batch. An event whose contact has the event's own id created that
-- contact (trackEvent gives a contact it creates the event's id).
DROP TRIGGER events_usage_insert;
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
-- The same as 0006's, as a BEFORE trigger: the event's INSERT then sees the
-- outbox row it adds in its RETURNING clause (src/store/events.ts insertEvent),
-- in place of a probe statement after it. The row's values are all known before
-- it is written (the id is the app's, contact_id a subquery of the VALUES).
DROP TRIGGER workflow_trigger_event;
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
