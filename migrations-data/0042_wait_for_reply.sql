-- A WAIT_FOR_EVENT step on email.received may wait for a reply to one email (config.replyTo names
-- the SEND_EMAIL step of the execution that sent it; issue 37): while it waits, that email's id.
-- NULL: any event of that name resumes it, as before (src/services/workflows/triggers.ts).
ALTER TABLE `workflow_executions` ADD `waiting_email_id` text;
