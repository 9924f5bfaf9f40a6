-- Custom SQL migration file, put your code below! --
-- Contact data is capped at 65536 bytes of JSON on every path that writes it
-- (POST/PATCH /contacts, /v1/send, /v1/track, workflows): merges grow the data,
-- so the cap is checked on the stored result, inside the write itself.
-- The app turns the error message CONTACT_DATA_TOO_LARGE into a 422 on `data`.
CREATE TRIGGER contacts_data_cap_insert BEFORE INSERT ON contacts
WHEN length(CAST(NEW.data AS BLOB)) > 65536
BEGIN
  SELECT RAISE(ABORT, 'CONTACT_DATA_TOO_LARGE');
END;
--> statement-breakpoint
CREATE TRIGGER contacts_data_cap_update BEFORE UPDATE OF data ON contacts
WHEN length(CAST(NEW.data AS BLOB)) > 65536
BEGIN
  SELECT RAISE(ABORT, 'CONTACT_DATA_TOO_LARGE');
END;
