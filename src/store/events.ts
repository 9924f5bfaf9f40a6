import { and, asc, eq, inArray, lt, sql, type SQL } from "drizzle-orm";
import { getDb } from "../db/client";
import { contacts, emails, type EventSource, events, type JsonObject } from "../db/schema";
import { readConfig, type ConfigInput } from "../lib/config";
import { newId } from "../lib/ids";
import { underDailyEventQuota, utcDayNumber } from "./guards";
import { probesWorkflowTriggers } from "./marks";

/**
 * A project event (POST /v1/track) for the contact with this lower-case
 * address, found by address in the same batch as the contact's upsert. It
 * returns one row saying whether the project's workflow outbox holds triggers
 * (workflowTriggersPendingOf), this event's included (workflow_trigger_event
 * is a BEFORE trigger, migration 0023), so the batch needs no outboxProbe.
 */
export function insertEvent(
  d1: D1Database,
  projectId: string,
  event: { id?: string; email: string; name: string; data: JsonObject; source: EventSource; createdAt: Date },
): D1PreparedStatement {
  return probesWorkflowTriggers(
    d1
      .prepare(INSERT_EVENT_SQL)
      .bind(event.id ?? newId(), projectId, event.email, event.name, JSON.stringify(event.data), event.createdAt.getTime(), event.source),
    projectId,
    workflowTriggersPendingOf,
  );
}
const INSERT_EVENT_SQL = `INSERT INTO events (id, project_id, contact_id, name, data, created_at, source)
  VALUES (?1, ?2, (SELECT id FROM contacts WHERE project_id = ?2 AND email = ?3), ?4, ?5, ?6, ?7)
  RETURNING EXISTS (SELECT 1 FROM workflow_trigger_outbox WHERE project_id = ?2) AS workflow_triggers_pending`;

/** From insertEvent's result: whether the workflow outbox holds triggers to hand over. */
export const workflowTriggersPendingOf = (rows: readonly Record<string, unknown>[]): boolean => rows[0]?.workflow_triggers_pending === 1;

/**
 * An event for the contact of an email, as one INSERT ... SELECT from the
 * email row: nothing for an unknown email, nor past the project's
 * events-per-day quota. `onlyIf` adds a condition, e.g. "not recorded before".
 */
export function insertEmailEvent(d1: D1Database, env: ConfigInput | undefined, emailId: string, name: string, data: JsonObject, now: Date, onlyIf?: SQL) {
  const db = getDb(d1);
  return db.insert(events).select(
    db
      .select({
        id: sql`${newId()}`.as("id"),
        projectId: emails.projectId,
        contactId: emails.contactId,
        name: sql`${name}`.as("name"),
        data: sql`${JSON.stringify(data)}`.as("data"),
        emailId: emails.id,
        source: sql`'system'`.as("source"),
        createdAt: sql`${now.getTime()}`.as("created_at"),
      })
      .from(emails)
      .where(and(eq(emails.id, emailId), onlyIf, underDailyEventQuota(emails.projectId, env, now))),
  );
}

/** An event for each contact matching `where` (e.g. contact.unsubscribed), within the events-per-day quota. */
export function insertContactEvent(
  d1: D1Database,
  env: ConfigInput | undefined,
  projectId: string,
  event: { name: string; data: JsonObject; emailId?: string | null; now: Date },
  where: SQL | undefined,
) {
  const db = getDb(d1);
  return db.insert(events).select(
    db
      .select({
        id: sql`${newId()}`.as("id"),
        projectId: contacts.projectId,
        contactId: contacts.id,
        name: sql`${event.name}`.as("name"),
        data: sql`${JSON.stringify(event.data)}`.as("data"),
        emailId: sql`${event.emailId ?? null}`.as("email_id"),
        source: sql`'system'`.as("source"),
        createdAt: sql`${event.now.getTime()}`.as("created_at"),
      })
      .from(contacts)
      .where(and(where, underDailyEventQuota(projectId, env, event.now))),
  );
}

/**
 * One event per topic choice of the contact with this address that the same batch changed
 * (contact_topics rows with this `updated_at` and source, after setContactTopics or optOutOfTopic):
 * `topic.opted_in`, `topic.opted_out` or `topic.pending` with `data: {topic, source}`, each with
 * the id given for its key in `ids`, within the events-per-day quota.
 */
export function insertTopicChangeEvents(
  d1: D1Database,
  env: ConfigInput | undefined,
  input: { projectId: string; email: string; source: string; now: Date; ids: Record<string, string>; emailId?: string | null },
): D1PreparedStatement {
  const { projectId, email, source, now } = input;
  return d1
    .prepare(TOPIC_EVENTS_SQL)
    .bind(
      projectId,
      email,
      source,
      now.getTime(),
      JSON.stringify(input.ids),
      input.emailId ?? null,
      utcDayNumber(now),
      readConfig(env ?? {}).QUOTA_EVENTS_PER_DAY,
    );
}
const TOPIC_EVENTS_SQL = `INSERT INTO events (id, project_id, contact_id, name, data, email_id, source, created_at)
  SELECT json_extract(?5, '$."' || t.key || '"'), ?1, c.id,
    CASE ct.status WHEN 'OPT_IN' THEN 'topic.opted_in' WHEN 'OPT_OUT' THEN 'topic.opted_out' ELSE 'topic.pending' END,
    json_object('topic', t.key, 'source', ?3), ?6, 'system', ?4
  FROM contacts c JOIN contact_topics ct ON ct.contact_id = c.id JOIN topics t ON t.id = ct.topic_id
  WHERE c.project_id = ?1 AND c.email = ?2 AND ct.updated_at = ?4 AND ct.source = ?3
    AND json_extract(?5, '$."' || t.key || '"') IS NOT NULL
    AND coalesce((SELECT events FROM project_daily_usage WHERE project_id = ?1 AND day = ?7), 0) < ?8`;

/** Deletes up to `limit` events with ids below `cutoff`, oldest first; returns their ids. */
export function pruneEvents(d1: D1Database, cutoff: string, limit: number) {
  const db = getDb(d1);
  const oldest = db.select({ id: events.id }).from(events).where(lt(events.id, cutoff)).orderBy(asc(events.id)).limit(limit);
  return db.delete(events).where(inArray(events.id, oldest)).returning({ id: events.id });
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { INSERT_EVENT_SQL, TOPIC_EVENTS_SQL };
