import { and, eq } from "drizzle-orm";
import { getDb } from "../db/client";
import { topics, type ContactTopicSource } from "../db/schema";

/**
 * Topics and contact_topics (migration 0037): a project's topics, and each contact's explicit
 * choice (no row: the topic's default). Deleting a contact or a topic deletes its choices
 * (ON DELETE CASCADE).
 */

export type TopicChange = Partial<Pick<typeof topics.$inferInsert, "name" | "description" | "visibility" | "doubleOptIn" | "updatedAt">>;

/** The insert, returning the row (for a batch behind the QUOTA_TOPICS guard). */
export function insertTopic(d1: D1Database, row: typeof topics.$inferInsert) {
  return getDb(d1).insert(topics).values(row).onConflictDoNothing().returning();
}

/** Applies the change to the project's topic; returns the row, none when there is no such topic. */
export function updateTopic(d1: D1Database, projectId: string, id: string, set: TopicChange) {
  return getDb(d1)
    .update(topics)
    .set(set)
    .where(and(eq(topics.id, id), eq(topics.projectId, projectId)))
    .returning();
}

/** Deletes the topic (its choices go with it); returns its id, none when there is no such topic. */
export function deleteTopic(d1: D1Database, projectId: string, id: string) {
  return getDb(d1)
    .delete(topics)
    .where(and(eq(topics.id, id), eq(topics.projectId, projectId)))
    .returning({ id: topics.id });
}

/** One wanted choice: the topic's key and OPT_IN or OPT_OUT. */
export interface TopicChoice {
  key: string;
  subscription: "OPT_IN" | "OPT_OUT";
}

/**
 * Sets the choices of the contact with this (lower-case) address in the project, found by address
 * in the same batch (so it works right after the contact's upsert). An OPT_IN for a double opt-in
 * topic becomes PENDING when `pendingForDoubleOptIn` (the API, /v1/track), unless the contact is
 * OPT_IN already. Unknown keys write nothing (the service checked them). Returns one row per
 * choice that changed: `{topic_id, key, status}`.
 */
export function setContactTopics(
  d1: D1Database,
  projectId: string,
  email: string,
  choices: readonly TopicChoice[],
  options: { source: ContactTopicSource; pendingForDoubleOptIn: boolean; now: Date },
): D1PreparedStatement {
  return d1
    .prepare(SET_CONTACT_TOPICS_SQL)
    .bind(projectId, email, JSON.stringify(choices), options.source, options.now.getTime(), options.pendingForDoubleOptIn ? 1 : 0);
}
const SET_CONTACT_TOPICS_SQL = `INSERT INTO contact_topics (contact_id, topic_id, project_id, status, source, updated_at)
  SELECT c.id, t.id, ?1,
    CASE WHEN json_extract(j.value, '$.subscription') = 'OPT_IN' AND ?6 = 1 AND t.double_opt_in = 1 THEN 'PENDING'
      ELSE json_extract(j.value, '$.subscription') END,
    ?4, ?5
  FROM json_each(?3) j
  JOIN topics t ON t.project_id = ?1 AND t.key = json_extract(j.value, '$.key')
  JOIN contacts c ON c.project_id = ?1 AND c.email = ?2
  WHERE true
  ON CONFLICT (contact_id, topic_id) DO UPDATE SET
    status = CASE WHEN excluded.status = 'PENDING' AND contact_topics.status = 'OPT_IN' THEN 'OPT_IN' ELSE excluded.status END,
    source = excluded.source, updated_at = excluded.updated_at
  WHERE contact_topics.status != excluded.status AND NOT (excluded.status = 'PENDING' AND contact_topics.status = 'OPT_IN')
  RETURNING topic_id, status, (SELECT key FROM topics WHERE id = contact_topics.topic_id) AS key`;

/**
 * Opts the contact with this address out of one topic (the unsubscribe of that topic's mail);
 * returns a row when it changed.
 */
export function optOutOfTopic(d1: D1Database, projectId: string, email: string, topicId: string, source: ContactTopicSource, now: Date): D1PreparedStatement {
  return d1.prepare(OPT_OUT_SQL).bind(projectId, email, topicId, source, now.getTime());
}
const OPT_OUT_SQL = `INSERT INTO contact_topics (contact_id, topic_id, project_id, status, source, updated_at)
  SELECT c.id, t.id, ?1, 'OPT_OUT', ?4, ?5
  FROM contacts c JOIN topics t ON t.id = ?3 AND t.project_id = ?1
  WHERE c.project_id = ?1 AND c.email = ?2
  ON CONFLICT (contact_id, topic_id) DO UPDATE SET status = 'OPT_OUT', source = excluded.source, updated_at = excluded.updated_at
  WHERE contact_topics.status != 'OPT_OUT'
  RETURNING topic_id, status, (SELECT key FROM topics WHERE id = contact_topics.topic_id) AS key`;

/** The contact's PENDING choices of double opt-in topics confirmed: OPT_IN (source confirm). Returns a row per topic changed. */
export function confirmPendingTopics(d1: D1Database, contactId: string, now: Date): D1PreparedStatement {
  return d1.prepare(CONFIRM_SQL).bind(contactId, now.getTime());
}
const CONFIRM_SQL = `UPDATE contact_topics SET status = 'OPT_IN', source = 'confirm', updated_at = ?2
  WHERE contact_id = ?1 AND status = 'PENDING'
  RETURNING topic_id, status, (SELECT key FROM topics WHERE id = contact_topics.topic_id) AS key`;

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { SET_CONTACT_TOPICS_SQL, OPT_OUT_SQL, CONFIRM_SQL };
