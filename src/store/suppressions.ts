import { and, asc, count, desc, eq, gte, lt, or, type SQL } from "drizzle-orm";
import { getDb } from "../db/client";
import { suppressions, type SUPPRESSION_REASONS, type SUPPRESSION_STREAMS } from "../db/schema";
import { readConfig, type ConfigInput } from "../lib/config";
import { utcDayNumber } from "./guards";
import { recordsWebhookEvents } from "./marks";

/**
 * The only writer of `suppressions`, the project's suppression list, keyed by the lower-cased
 * address: BOUNCE and COMPLAINT from provider feedback, MANUAL from POST /suppressions (each stops
 * ALL mail), UNSUBSCRIBE (BROADCAST mail only) kept by the contacts triggers of migration 0036
 * whatever path unsubscribes. Which mail each stops: src/services/consent/gates.ts.
 */

export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];
export type SuppressionStream = (typeof SUPPRESSION_STREAMS)[number];
export type SuppressionRow = typeof suppressions.$inferSelect;

/**
 * An automatic entry (a hard bounce, a complaint): every stream. The first reason that stops all
 * mail is kept; an UNSUBSCRIBE entry (broadcast only) is replaced, since the address now refuses
 * transactional mail too. For the caller's batch, after recordSuppressionCreated.
 */
export function insertSuppression(d1: D1Database, projectId: string, email: string, reason: "BOUNCE" | "COMPLAINT", detail: string | null, now = new Date()) {
  return d1.prepare(INSERT_SUPPRESSION_SQL).bind(projectId, email.trim().toLowerCase(), reason, detail, now.getTime());
}
const INSERT_SUPPRESSION_SQL = `INSERT INTO suppressions (project_id, email, reason, stream, detail, note, created_at) VALUES (?1, ?2, ?3, 'ALL', ?4, NULL, ?5)
  ON CONFLICT (project_id, email) DO UPDATE SET reason = excluded.reason, stream = 'ALL', detail = excluded.detail, note = NULL, created_at = excluded.created_at
  WHERE suppressions.stream = 'BROADCAST'`;

/**
 * An unsubscribe the recipient made (a link, one-click) as an UNSUBSCRIBE entry of broadcast mail,
 * when the address has none: the contacts triggers of 0036 add it when a contact goes from
 * subscribed to unsubscribed; this covers a contact created unsubscribed by the unsubscribe itself
 * (the old one was deleted) and one unsubscribed before 0036. For the caller's batch, after the contact write.
 */
export function insertUnsubscribeSuppression(d1: D1Database, projectId: string, email: string, now: Date) {
  return d1.prepare(INSERT_UNSUBSCRIBE_SQL).bind(projectId, email.trim().toLowerCase(), now.getTime());
}
const INSERT_UNSUBSCRIBE_SQL = `INSERT INTO suppressions (project_id, email, reason, stream, created_at) VALUES (?1, ?2, 'UNSUBSCRIBE', 'BROADCAST', ?3)
  ON CONFLICT (project_id, email) DO NOTHING`;

/**
 * POST /suppressions: MANUAL entries (every stream) for these lower-cased addresses, one
 * statement for all of them (one JSON parameter). An address already stopped for every stream
 * keeps its entry; an UNSUBSCRIBE entry becomes MANUAL. RETURNING: the addresses it added.
 */
export function insertManualSuppressions(d1: D1Database, projectId: string, emails: readonly string[], note: string | null, now: Date) {
  return d1.prepare(INSERT_MANUAL_SQL).bind(projectId, JSON.stringify(emails), note, now.getTime());
}
// `WHERE true`: SQLite's parser needs it between a SELECT and ON CONFLICT.
const INSERT_MANUAL_SQL = `INSERT INTO suppressions (project_id, email, reason, stream, detail, note, created_at)
  SELECT ?1, value, 'MANUAL', 'ALL', NULL, ?3, ?4 FROM json_each(?2) WHERE true
  ON CONFLICT (project_id, email) DO UPDATE SET reason = 'MANUAL', stream = 'ALL', detail = NULL, note = excluded.note, created_at = excluded.created_at
  WHERE suppressions.stream = 'BROADCAST'
  RETURNING email`;

/**
 * QUOTA_SUPPRESSIONS for a POST /suppressions, first in its batch: the project's entries plus
 * the addresses the batch adds (not yet stopped for every stream), against the limit; past it
 * the quota_checks_suppressions trigger (0036) aborts the batch. Automatic entries are never refused.
 */
export function suppressionQuotaGuard(d1: D1Database, env: ConfigInput, projectId: string, emails: readonly string[]) {
  return d1.prepare(SUPPRESSION_QUOTA_SQL).bind(projectId, JSON.stringify(emails), readConfig(env).QUOTA_SUPPRESSIONS);
}
const SUPPRESSION_QUOTA_SQL = `INSERT INTO quota_checks (quota, used, quota_limit)
  SELECT 'QUOTA_SUPPRESSIONS', (SELECT count(*) FROM suppressions WHERE project_id = ?1)
    + (SELECT count(*) FROM json_each(?2) AS j WHERE NOT EXISTS (SELECT 1 FROM suppressions AS s WHERE s.project_id = ?1 AND s.email = j.value)), ?3`;

/** DELETE /suppressions/{email}: RETURNING the address when there was an entry. */
export function deleteSuppression(d1: D1Database, projectId: string, email: string) {
  return d1.prepare(DELETE_SQL).bind(projectId, email);
}
const DELETE_SQL = "DELETE FROM suppressions WHERE project_id = ?1 AND email = ?2 RETURNING email";

/** One entry of the project's list. */
export function suppressionOf(d1: D1Database, projectId: string, email: string) {
  return getDb(d1)
    .select()
    .from(suppressions)
    .where(and(eq(suppressions.projectId, projectId), eq(suppressions.email, email)));
}

export interface SuppressionFilter {
  reason?: SuppressionReason;
  /** The address, or its beginning (lower case): a range of suppressions_pk. */
  email?: string;
}

/** The filters as a condition on the project's rows, each on its index (reason: suppressions_project_reason_idx; email: suppressions_pk). */
function filterWhere(projectId: string, filter: SuppressionFilter): SQL {
  return and(
    eq(suppressions.projectId, projectId),
    filter.reason ? eq(suppressions.reason, filter.reason) : undefined,
    // A prefix as a range: every address that starts with it sorts between it and it + U+10FFFF.
    filter.email ? and(gte(suppressions.email, filter.email), lt(suppressions.email, `${filter.email}\u{10FFFF}`)) : undefined,
  )!;
}

/**
 * GET /suppressions: a page newest first (created_at, then address, both descending) after the
 * cursor's row, and the total under the same filters; both read in the caller's batch.
 */
export function listSuppressions(
  d1: D1Database,
  projectId: string,
  filter: SuppressionFilter,
  page: { limit: number; after?: { createdAt: number; email: string } },
) {
  const db = getDb(d1);
  const where = filterWhere(projectId, filter);
  const after = page.after
    ? or(
        lt(suppressions.createdAt, new Date(page.after.createdAt)),
        and(eq(suppressions.createdAt, new Date(page.after.createdAt)), lt(suppressions.email, page.after.email)),
      )
    : undefined;
  return {
    rows: db
      .select()
      .from(suppressions)
      .where(and(where, after))
      .orderBy(desc(suppressions.createdAt), desc(suppressions.email))
      .limit(page.limit + 1),
    total: db.select({ total: count() }).from(suppressions).where(where),
  };
}

/** Entries of a project, oldest first, for an export or a test (not an API path). */
export function allSuppressions(d1: D1Database, projectId: string) {
  return getDb(d1).select().from(suppressions).where(eq(suppressions.projectId, projectId)).orderBy(asc(suppressions.createdAt), asc(suppressions.email));
}

// ---- events and webhook events of a change -------------------------------------------------

const ISO = (column: string) => `strftime('%Y-%m-%dT%H:%M:%fZ', ${column} / 1000.0, 'unixepoch')`;
const SUBSCRIBED = (type: string) => `EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = ?1 AND w.enabled = 1
    AND (w.events = '[]' OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = '${type}')))`;

/**
 * `suppression.created` for each address of `items` ([eventId, address]) the entry written next in
 * the batch will stop for every stream (no entry yet, or an UNSUBSCRIBE one): put it before that
 * write. Data: the entry as GET /suppressions lists it. Only when an enabled endpoint subscribes.
 */
export function recordSuppressionCreated(
  d1: D1Database,
  input: { projectId: string; items: readonly (readonly [string, string])[]; reason: SuppressionReason; note: string | null; at: Date },
): D1PreparedStatement {
  return recordsWebhookEvents(
    d1.prepare(CREATED_EVENTS_SQL).bind(input.projectId, JSON.stringify(input.items), input.reason, input.note, input.at.toISOString(), input.at.getTime()),
  );
}
const CREATED_EVENTS_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT json_extract(j.value, '$[0]'), ?1, 'suppression.created', json_object('type', 'suppression.created', 'timestamp', ?5, 'data', json_object(
      'email', json_extract(j.value, '$[1]'), 'reason', ?3, 'stream', 'ALL', 'note', ?4, 'createdAt', ?5)), ?6
  FROM json_each(?2) AS j
  WHERE NOT EXISTS (SELECT 1 FROM suppressions AS s WHERE s.project_id = ?1 AND s.email = json_extract(j.value, '$[1]') AND s.stream = 'ALL')
    AND ${SUBSCRIBED("suppression.created")}
  RETURNING id, project_id`;

/** `suppression.deleted` for the entry of `email` the batch deletes next (put it before the delete); data: the entry as it was. */
export function recordSuppressionDeleted(d1: D1Database, input: { id: string; projectId: string; email: string; at: Date }): D1PreparedStatement {
  return recordsWebhookEvents(d1.prepare(DELETED_EVENT_SQL).bind(input.projectId, input.email, input.id, input.at.toISOString(), input.at.getTime()));
}
const DELETED_EVENT_SQL = `INSERT INTO webhook_events (id, project_id, type, payload, created_at)
  SELECT ?3, ?1, 'suppression.deleted', json_object('type', 'suppression.deleted', 'timestamp', ?4, 'data', json_object(
      'email', s.email, 'reason', s.reason, 'stream', s.stream, 'note', coalesce(s.note, s.detail), 'createdAt', ${ISO("s.created_at")})), ?5
  FROM suppressions AS s WHERE s.project_id = ?1 AND s.email = ?2 AND ${SUBSCRIBED("suppression.deleted")}
  RETURNING id, project_id`;

/**
 * The events (GET /events, a contact's timeline; workflows can start on them) of a change to the
 * list, one per address that is a contact of the project: `suppression.created` for the addresses
 * ([eventId, address]) the next write adds (before it), `suppression.deleted` for an entry the next
 * write deletes (before it). Data: {email, reason, stream, note}. Within QUOTA_EVENTS_PER_DAY.
 */
export function insertSuppressionEvents(
  d1: D1Database,
  env: ConfigInput | undefined,
  input: {
    projectId: string;
    name: "suppression.created" | "suppression.deleted";
    items: readonly (readonly [string, string])[];
    note: string | null;
    now: Date;
  },
): D1PreparedStatement {
  const { projectId, now } = input;
  return d1
    .prepare(input.name === "suppression.created" ? CREATED_CONTACT_EVENTS_SQL : DELETED_CONTACT_EVENTS_SQL)
    .bind(projectId, JSON.stringify(input.items), input.note, now.getTime(), utcDayNumber(now), readConfig(env ?? {}).QUOTA_EVENTS_PER_DAY);
}
const UNDER_EVENT_QUOTA = "coalesce((SELECT events FROM project_daily_usage WHERE project_id = ?1 AND day = ?5), 0) < ?6";
const CREATED_CONTACT_EVENTS_SQL = `INSERT INTO events (id, project_id, contact_id, name, data, email_id, source, created_at)
  SELECT json_extract(j.value, '$[0]'), ?1, c.id, 'suppression.created',
    json_object('email', c.email, 'reason', 'MANUAL', 'stream', 'ALL', 'note', ?3), NULL, 'system', ?4
  FROM json_each(?2) AS j JOIN contacts AS c ON c.project_id = ?1 AND c.email = json_extract(j.value, '$[1]')
  WHERE NOT EXISTS (SELECT 1 FROM suppressions AS s WHERE s.project_id = ?1 AND s.email = c.email AND s.stream = 'ALL') AND ${UNDER_EVENT_QUOTA}`;
const DELETED_CONTACT_EVENTS_SQL = `INSERT INTO events (id, project_id, contact_id, name, data, email_id, source, created_at)
  SELECT json_extract(j.value, '$[0]'), ?1, c.id, 'suppression.deleted',
    json_object('email', c.email, 'reason', s.reason, 'stream', s.stream, 'note', coalesce(s.note, s.detail, ?3)), NULL, 'system', ?4
  FROM json_each(?2) AS j JOIN contacts AS c ON c.project_id = ?1 AND c.email = json_extract(j.value, '$[1]')
    JOIN suppressions AS s ON s.project_id = ?1 AND s.email = c.email
  WHERE ${UNDER_EVENT_QUOTA}`;

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = {
  INSERT_SUPPRESSION_SQL,
  INSERT_UNSUBSCRIBE_SQL,
  INSERT_MANUAL_SQL,
  SUPPRESSION_QUOTA_SQL,
  DELETE_SQL,
  CREATED_EVENTS_SQL,
  DELETED_EVENT_SQL,
  CREATED_CONTACT_EVENTS_SQL,
  DELETED_CONTACT_EVENTS_SQL,
};
