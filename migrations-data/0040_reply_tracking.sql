-- Reply tracking (CONTRACT "Inbound email"; issue 37): a project's default (PATCH /project
-- {inbound: {trackReplies}}, off by default) and a send's own choice (/v1/send trackReplies:
-- NULL follows the project, 0 off, 1 asked). With replies tracked an email's Reply-To is its
-- signed reply address on INBOUND_DOMAIN (src/services/inbound/reply-token.ts), chosen when it is
-- delivered (src/services/send/reply-to.ts): the project's default never replaces a Reply-To the
-- mail already has, a send's `trackReplies: true` does. In-Reply-To and References of a send
-- answering an inbound message travel in its send_headers row.
ALTER TABLE `projects` ADD `track_replies` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `emails` ADD `track_replies` integer;
