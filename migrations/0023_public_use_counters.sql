-- Issue 24: a public key's daily counters kept by the events trigger that
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
