-- Custom SQL migration file, put your code below! --
-- Usage counters kept by triggers (see project_usage / project_daily_usage in
-- src/db/schema.ts): every path that inserts or deletes a contact, or inserts
-- an event or an email, keeps them right, so the quota checks read one row
-- instead of counting the project's rows.
CREATE TRIGGER contacts_usage_insert AFTER INSERT ON contacts
BEGIN
  INSERT INTO project_usage (project_id, contacts) VALUES (NEW.project_id, 1)
    ON CONFLICT (project_id) DO UPDATE SET contacts = contacts + 1;
END;
--> statement-breakpoint
CREATE TRIGGER contacts_usage_delete AFTER DELETE ON contacts
BEGIN
  UPDATE project_usage SET contacts = max(0, contacts - 1) WHERE project_id = OLD.project_id;
END;
--> statement-breakpoint
CREATE TRIGGER events_usage_insert AFTER INSERT ON events
BEGIN
  INSERT INTO project_daily_usage (project_id, day, events) VALUES (NEW.project_id, CAST(NEW.created_at / 86400000 AS INTEGER), 1)
    ON CONFLICT (project_id, day) DO UPDATE SET events = events + 1;
END;
--> statement-breakpoint
CREATE TRIGGER emails_usage_insert AFTER INSERT ON emails
BEGIN
  INSERT INTO project_daily_usage (project_id, day, emails) VALUES (NEW.project_id, CAST(NEW.created_at / 86400000 AS INTEGER), 1)
    ON CONFLICT (project_id, day) DO UPDATE SET emails = emails + 1;
END;
--> statement-breakpoint
-- What exists already: every project's contacts, and today's events and emails.
INSERT INTO project_usage (project_id, contacts)
  SELECT project_id, count(*) FROM contacts GROUP BY project_id;
--> statement-breakpoint
INSERT INTO project_daily_usage (project_id, day, events)
  SELECT project_id, CAST(created_at / 86400000 AS INTEGER) AS day, count(*) FROM events
  WHERE created_at >= CAST(unixepoch('now') / 86400 AS INTEGER) * 86400000 GROUP BY project_id, day;
--> statement-breakpoint
INSERT INTO project_daily_usage (project_id, day, emails)
  SELECT project_id, CAST(created_at / 86400000 AS INTEGER) AS day, count(*) FROM emails
  WHERE created_at >= CAST(unixepoch('now') / 86400 AS INTEGER) * 86400000 GROUP BY project_id, day HAVING true
  ON CONFLICT (project_id, day) DO UPDATE SET emails = excluded.emails;
