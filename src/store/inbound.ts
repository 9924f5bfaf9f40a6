import { and, count, desc, eq, lt, sql, type SQL } from "drizzle-orm";
import { getDb } from "../db/client";
import { type InboundAttachment, type InboundMatch, type InboundRoute, inboundMessages } from "../db/inbound-schema";
import { emails } from "../db/schema";
import { readConfig, type ConfigInput } from "../lib/config";
import { utcDayNumber } from "./guards";
import { probesWorkflowTriggers, recordsWebhookEvents } from "./marks";
import { INBOUND_PREFIX } from "./objects/inbound";
import { usageDay } from "./objects/usage";

/**
 * The only writer of `inbound_messages` (migration 0039): the email() handler's RECEIVED row
 * (with the R2 bytes it adds), the consumer's parse result in one batch with the
 * `email.received` event and webhook event, FAILED rows, and retention. Every write of the
 * parse is conditional on the row still being RECEIVED, so a redelivered queue message adds
 * nothing (no second event, no second webhook).
 */

export type InboundRow = typeof inboundMessages.$inferSelect;

/** What email() reads before it stores anything: the project (null: unknown), its messages today and its R2 bytes. */
export function inboundProjectState(d1: D1Database, projectId: string, now: Date) {
  return d1.prepare(PROJECT_STATE_SQL).bind(projectId, utcDayNumber(now));
}
const PROJECT_STATE_SQL = `SELECT p.disabled AS disabled, p.r2_stored_bytes AS r2_stored_bytes,
    coalesce((SELECT inbound FROM project_daily_usage WHERE project_id = p.id AND day = ?2), 0) AS inbound_today
  FROM projects p WHERE p.id = ?1`;

/** The project and contact of an email (a reply token names the email only); null row when this shard has no such email. */
export function emailOwner(d1: D1Database, emailId: string) {
  return d1.prepare(EMAIL_OWNER_SQL).bind(emailId);
}
const EMAIL_OWNER_SQL = "SELECT project_id, contact_id FROM emails WHERE id = ?1";

export interface ReceivedInput {
  id: string;
  projectId: string;
  emailId: string | null;
  contactId: string | null;
  route: InboundRoute;
  envelopeFrom: string;
  envelopeTo: string;
  size: number;
  r2Key: string;
  createdAt: Date;
}

/**
 * The row of a message email() stored in R2, written only while the project is under
 * QUOTA_INBOUND_PER_DAY (counted by the inbound_messages_usage_insert trigger): RETURNING id
 * when written. The token's email is kept only when it is still this project's (TOKEN), so
 * the consumer reads the match from the row.
 */
export function insertReceived(d1: D1Database, env: ConfigInput, input: ReceivedInput): D1PreparedStatement {
  return d1
    .prepare(INSERT_RECEIVED_SQL)
    .bind(
      input.id,
      input.projectId,
      input.emailId,
      input.contactId,
      input.route,
      input.envelopeFrom,
      input.envelopeTo,
      input.size,
      input.r2Key,
      input.createdAt.getTime(),
      utcDayNumber(input.createdAt),
      readConfig(env).QUOTA_INBOUND_PER_DAY,
    );
}
const INSERT_RECEIVED_SQL = `INSERT INTO inbound_messages (id, project_id, email_id, contact_id, route, envelope_from, envelope_to, match, size, r2_key, status, created_at)
  SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, CASE WHEN ?3 IS NULL THEN 'NONE' ELSE 'TOKEN' END, ?8, ?9, 'RECEIVED', ?10
  WHERE coalesce((SELECT inbound FROM project_daily_usage WHERE project_id = ?2 AND day = ?11), 0) < ?12
  RETURNING id`;

/** The raw message's bytes in r2_usage (QUOTA_R2_STORED_BYTES), only when the same batch wrote its row: after insertReceived. */
export function countReceivedBytes(d1: D1Database, input: { id: string; projectId: string; size: number; createdAt: Date }): D1PreparedStatement {
  return d1.prepare(COUNT_BYTES_SQL).bind(input.projectId, INBOUND_PREFIX, usageDay(input.createdAt), input.size, input.id);
}
const COUNT_BYTES_SQL = `INSERT INTO r2_usage (project_id, prefix, day, bytes) SELECT ?1, ?2, ?3, ?4
  WHERE EXISTS (SELECT 1 FROM inbound_messages WHERE id = ?5)
  ON CONFLICT (project_id, prefix, day) DO UPDATE SET bytes = bytes + excluded.bytes`;

/** One row by id within its project. */
export function inboundOf(d1: D1Database, projectId: string, id: string) {
  return getDb(d1)
    .select()
    .from(inboundMessages)
    .where(and(eq(inboundMessages.projectId, projectId), eq(inboundMessages.id, id)))
    .limit(1);
}

/**
 * Emails of the project whose provider message id is one of `candidates` (In-Reply-To and
 * References ids as the providers store them: SES the bare MessageId, Cloudflare the id without
 * brackets), through emails_provider_message_idx, never another project's.
 */
export function emailsByProviderIds(d1: D1Database, projectId: string, candidates: readonly string[]) {
  return d1.prepare(BY_PROVIDER_IDS_SQL).bind(projectId, JSON.stringify(candidates));
}
const BY_PROVIDER_IDS_SQL = `SELECT id, contact_id, provider_message_id FROM emails
  WHERE provider_message_id IN (SELECT value FROM json_each(?2)) AND project_id = ?1 LIMIT 200`;

/** The project's contact with this lower-case address (receiving mail never creates one). */
export function contactIdByAddress(d1: D1Database, projectId: string, address: string) {
  return d1.prepare(CONTACT_BY_ADDRESS_SQL).bind(projectId, address);
}
const CONTACT_BY_ADDRESS_SQL = "SELECT id FROM contacts WHERE project_id = ?1 AND email = ?2";

/** What the consumer found in a message. */
export interface ParsedInput {
  id: string;
  projectId: string;
  emailId: string | null;
  contactId: string | null;
  match: InboundMatch;
  fromAddress: string | null;
  fromName: string | null;
  subject: string | null;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  autoReply: boolean;
  text: string | null;
  strippedText: string | null;
  attachments: InboundAttachment[];
  /** Set when the message was too large to parse whole (headers and text only). */
  error: string | null;
  at: Date;
}

const STILL_RECEIVED = "EXISTS (SELECT 1 FROM inbound_messages WHERE id = ?1 AND status = 'RECEIVED')";

/**
 * The `email.received` event of a parsed message, for its contact: the contract's data, the
 * email it answers as the event's email_id. Only a real reply records it (never an auto-reply or
 * delivery report, so a wait for a reply is not ended by an out-of-office), only for a contact,
 * within QUOTA_EVENTS_PER_DAY, and only while the row is RECEIVED: put it before markParsed.
 * RETURNING whether the workflow outbox holds triggers (workflow_trigger_event starts
 * workflows on it and resumes WAIT_FOR_EVENT steps).
 */
export function insertReceivedEvent(
  d1: D1Database,
  env: ConfigInput,
  input: { eventId: string; inboundId: string; projectId: string; contactId: string; emailId: string | null; data: unknown; at: Date },
) {
  return probesWorkflowTriggers(
    d1
      .prepare(RECEIVED_EVENT_SQL)
      .bind(
        input.inboundId,
        input.eventId,
        input.projectId,
        input.contactId,
        JSON.stringify(input.data),
        input.emailId,
        input.at.getTime(),
        utcDayNumber(input.at),
        readConfig(env).QUOTA_EVENTS_PER_DAY,
      ),
    input.projectId,
    (rows) => rows[0]?.workflow_triggers_pending === 1,
  );
}
const RECEIVED_EVENT_SQL = `INSERT INTO events (id, project_id, contact_id, name, data, email_id, source, created_at)
  SELECT ?2, ?3, c.id, 'email.received', ?5, ?6, 'system', ?7 FROM contacts c
  WHERE c.id = ?4 AND c.project_id = ?3 AND ${STILL_RECEIVED}
    AND coalesce((SELECT events FROM project_daily_usage WHERE project_id = ?3 AND day = ?8), 0) < ?9
  RETURNING EXISTS (SELECT 1 FROM workflow_trigger_outbox WHERE project_id = ?3) AS workflow_triggers_pending`;

/** The `email.received` webhook event, when an enabled endpoint subscribes and the row is RECEIVED: put it before markParsed. */
export function recordReceivedWebhook(d1: D1Database, input: { eventId: string; inboundId: string; projectId: string; data: unknown; at: Date }) {
  return recordsWebhookEvents(
    d1
      .prepare(RECEIVED_WEBHOOK_SQL)
      .bind(input.inboundId, input.eventId, input.projectId, input.at.toISOString(), JSON.stringify(input.data), input.at.getTime()),
  );
}
const RECEIVED_WEBHOOK_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT ?2, ?3, 'email.received', json_object('type', 'email.received', 'timestamp', ?4, 'data', json(?5)), ?6
  WHERE ${STILL_RECEIVED} AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = ?3 AND w.enabled = 1
    AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = 'email.received')))
  RETURNING id, project_id`;

/** RECEIVED -> PARSED with what the parse found; RETURNING id when this batch made the change. */
export function markParsed(d1: D1Database, input: ParsedInput): D1PreparedStatement {
  return d1
    .prepare(MARK_PARSED_SQL)
    .bind(
      input.id,
      input.emailId,
      input.contactId,
      input.match,
      input.fromAddress,
      input.fromName,
      input.subject,
      input.messageId,
      input.inReplyTo,
      JSON.stringify(input.references),
      input.autoReply ? 1 : 0,
      input.text,
      input.strippedText,
      JSON.stringify(input.attachments),
      input.error,
      input.at.getTime(),
    );
}
const MARK_PARSED_SQL = `UPDATE inbound_messages SET email_id = ?2, contact_id = ?3, match = ?4, from_address = ?5, from_name = ?6, subject = ?7,
    message_id = ?8, in_reply_to = ?9, references_json = ?10, auto_reply = ?11, text = ?12, stripped_text = ?13, attachments_json = ?14,
    error = ?15, status = 'PARSED', parsed_at = ?16
  WHERE id = ?1 AND status = 'RECEIVED' RETURNING id`;

/** RECEIVED -> FAILED (a message that cannot be parsed, or whose retries ran out): the raw message stays downloadable. */
export function markFailed(d1: D1Database, id: string, error: string, at: Date): D1PreparedStatement {
  return d1.prepare(MARK_FAILED_SQL).bind(id, error.slice(0, 1000), at.getTime());
}
const MARK_FAILED_SQL = "UPDATE inbound_messages SET status = 'FAILED', error = ?2, parsed_at = ?3 WHERE id = ?1 AND status = 'RECEIVED' RETURNING id";

export interface InboundFilter {
  emailId?: string;
  contactId?: string;
  campaignId?: string;
}

/** The filters as a condition, each on an index: (email_id, id), (contact_id, id), a campaign through its emails. */
export function inboundWhere(projectId: string, filter: InboundFilter): SQL {
  return and(
    eq(inboundMessages.projectId, projectId),
    filter.emailId !== undefined ? eq(inboundMessages.emailId, filter.emailId) : undefined,
    filter.contactId !== undefined ? eq(inboundMessages.contactId, filter.contactId) : undefined,
    filter.campaignId !== undefined
      ? sql`${inboundMessages.emailId} IN (SELECT ${emails.id} FROM ${emails} WHERE ${emails.projectId} = ${projectId} AND ${emails.campaignId} = ${filter.campaignId})`
      : undefined,
  )!;
}

/** A page of the project's messages, newest first after `after` (an id), limit + 1 rows, and the total under the filters; read in one batch. */
export function listInbound(d1: D1Database, projectId: string, filter: InboundFilter, page: { limit: number; after?: string }) {
  const db = getDb(d1);
  const where = inboundWhere(projectId, filter);
  return {
    rows: db
      .select()
      .from(inboundMessages)
      .where(page.after ? and(where, lt(inboundMessages.id, page.after)) : where)
      .orderBy(desc(inboundMessages.id))
      .limit(page.limit + 1),
    total: db.select({ total: count() }).from(inboundMessages).where(where),
  };
}

/** Campaign stats: recipients of the campaign's emails who replied (auto-replies excluded). */
export function campaignRepliedCount(campaignId: SQL | string) {
  return sql<number>`(SELECT count(DISTINCT ${inboundMessages.emailId}) FROM ${inboundMessages} WHERE ${inboundMessages.autoReply} = 0 AND ${inboundMessages.emailId} IN (SELECT ${emails.id} FROM ${emails} WHERE ${emails.campaignId} = ${campaignId}))`;
}

/** Deletes up to `limit` rows with ids below `cutoff` (older than the retention), oldest first; RETURNING their ids. */
export function pruneInbound(d1: D1Database, cutoff: string, limit: number): D1PreparedStatement {
  return d1.prepare(PRUNE_SQL).bind(cutoff, limit);
}
const PRUNE_SQL = "DELETE FROM inbound_messages WHERE id IN (SELECT id FROM inbound_messages WHERE id < ?1 ORDER BY id LIMIT ?2) RETURNING id";

/** Rows still RECEIVED a while after they arrived (a lost queue message): the sweep queues them again. */
export function staleReceived(d1: D1Database, before: string, limit: number): D1PreparedStatement {
  return d1.prepare(STALE_SQL).bind(before, limit);
}
const STALE_SQL = "SELECT id, project_id FROM inbound_messages WHERE status = 'RECEIVED' AND id < ?1 ORDER BY id LIMIT ?2";

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = {
  PROJECT_STATE_SQL,
  EMAIL_OWNER_SQL,
  INSERT_RECEIVED_SQL,
  COUNT_BYTES_SQL,
  BY_PROVIDER_IDS_SQL,
  CONTACT_BY_ADDRESS_SQL,
  RECEIVED_EVENT_SQL,
  RECEIVED_WEBHOOK_SQL,
  MARK_PARSED_SQL,
  MARK_FAILED_SQL,
  PRUNE_SQL,
  STALE_SQL,
};
