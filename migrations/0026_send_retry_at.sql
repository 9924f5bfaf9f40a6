-- Issue 38 (faults): when a QUEUED email's retry is due after a definite "not now" from the provider
-- (throttling, 5xx). The stuck-mail sweep (src/services/send/sweep.ts) re-queues QUEUED mail untouched for a
-- minute as lost; mail waiting for its back-off is left alone until retry_at plus that minute, so a long
-- back-off is not cut short by copies of its message. NULL: no retry pending.
ALTER TABLE `emails` ADD `retry_at` integer;
