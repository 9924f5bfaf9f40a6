import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Inbound email (migration 0039, issue 37): one row per message the email() handler accepted.
 * Its own module beside schema.ts; src/store/inbound.ts is its only writer.
 */

export const INBOUND_ROUTES = ["REPLY", "NAMED"] as const;
export type InboundRoute = (typeof INBOUND_ROUTES)[number];
export const INBOUND_MATCHES = ["TOKEN", "HEADERS", "NONE"] as const;
export type InboundMatch = (typeof INBOUND_MATCHES)[number];
export const INBOUND_STATUSES = ["RECEIVED", "PARSED", "FAILED"] as const;
export type InboundStatus = (typeof INBOUND_STATUSES)[number];

/** An attachment as the row keeps it: metadata only (the content stays in the raw message in R2). */
export interface InboundAttachment {
  filename: string | null;
  contentType: string;
  size: number;
}

export const inboundMessages = sqliteTable(
  "inbound_messages",
  {
    id: text("id").primaryKey(),
    projectId: text("project_id").notNull(),
    /** The email it answers (by its reply token, or In-Reply-To / References within the project); null when unthreaded. */
    emailId: text("email_id"),
    contactId: text("contact_id"),
    /** REPLY: r+<token>@INBOUND_DOMAIN; NAMED: <name>+<project id>@INBOUND_DOMAIN. */
    route: text("route", { enum: INBOUND_ROUTES }).notNull(),
    envelopeFrom: text("envelope_from").notNull(),
    envelopeTo: text("envelope_to").notNull(),
    fromAddress: text("from_address"),
    fromName: text("from_name"),
    subject: text("subject"),
    /** The Message-ID header, with its angle brackets. */
    messageId: text("message_id"),
    inReplyTo: text("in_reply_to"),
    /** The References header's ids, with brackets, at most 100 (the last ones). */
    referencesJson: text("references_json", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    match: text("match", { enum: INBOUND_MATCHES }).notNull().default("NONE"),
    autoReply: integer("auto_reply", { mode: "boolean" }).notNull().default(false),
    size: integer("size").notNull(),
    r2Key: text("r2_key").notNull(),
    text: text("text"),
    strippedText: text("stripped_text"),
    attachmentsJson: text("attachments_json", { mode: "json" }).$type<InboundAttachment[]>().notNull().default(sql`'[]'`),
    status: text("status", { enum: INBOUND_STATUSES }).notNull().default("RECEIVED"),
    error: text("error"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    parsedAt: integer("parsed_at", { mode: "timestamp_ms" }),
  },
  (t) => [
    index("inbound_messages_project_id_idx").on(t.projectId, t.id),
    index("inbound_messages_email_idx").on(t.emailId, t.id).where(sql`email_id IS NOT NULL`),
    index("inbound_messages_contact_idx").on(t.contactId, t.id).where(sql`contact_id IS NOT NULL`),
    index("inbound_messages_received_idx").on(t.id).where(sql`status = 'RECEIVED'`),
  ],
);

export type InboundMessage = typeof inboundMessages.$inferSelect;
