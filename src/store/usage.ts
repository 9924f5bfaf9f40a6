/**
 * The usage counters kept by D1 triggers (migration 0012): project_usage.contacts
 * and today's project_daily_usage events and emails. Here they are recounted
 * from the rows themselves, a page of projects at a time, and set right where
 * they drifted; each fix is one statement, so a write racing it is counted
 * either in the recount or by its trigger after it, never lost.
 */

import { idAtTime } from "../lib/ids";

const DAY_MS = 86_400_000;

/** One page of projects (ordered by id) with the counters as they stand. */
export function usagePage(d1: D1Database, day: number, offset: number, limit: number): D1PreparedStatement {
  return d1.prepare(USAGE_PAGE_SQL).bind(day, limit, offset);
}
const USAGE_PAGE_SQL = `SELECT p.id AS projectId,
    coalesce(u.contacts, 0) AS contacts, coalesce(d.events, 0) AS events, coalesce(d.emails, 0) AS emails
  FROM (SELECT id FROM projects ORDER BY id LIMIT ?2 OFFSET ?3) p
  LEFT JOIN project_usage u ON u.project_id = p.id
  LEFT JOIN project_daily_usage d ON d.project_id = p.id AND d.day = ?1`;

export function countProjects(d1: D1Database): D1PreparedStatement {
  return d1.prepare("SELECT count(*) AS n FROM projects");
}

export interface UsageCounters {
  projectId: string;
  contacts: number;
  events: number;
  emails: number;
}

/** Sets project_usage.contacts to the project's contacts; returns a row only when it changed it. */
export function fixContactsCounter(d1: D1Database, projectId: string): D1PreparedStatement {
  return d1.prepare(FIX_CONTACTS_SQL).bind(projectId);
}
const FIX_CONTACTS_SQL = `INSERT INTO project_usage (project_id, contacts)
  SELECT ?1, n FROM (SELECT count(*) AS n FROM contacts WHERE project_id = ?1)
  WHERE n != coalesce((SELECT contacts FROM project_usage WHERE project_id = ?1), 0)
  ON CONFLICT (project_id) DO UPDATE SET contacts = excluded.contacts
  RETURNING project_id AS projectId, contacts`;

/**
 * Sets the day's events and emails counters to the project's rows created that
 * UTC day; returns a row only when it changed them. Ids are UUIDv7 of the
 * moment of writing, so an id range an hour wider than the day finds the
 * rows on the (project_id, id) indexes, and created_at (what the triggers
 * count by) decides.
 */
export function fixDailyCounters(d1: D1Database, projectId: string, day: number): D1PreparedStatement {
  const start = day * DAY_MS;
  const end = start + DAY_MS;
  return d1.prepare(FIX_DAILY_SQL).bind(projectId, day, start, end, idAtTime(start - 3_600_000), idAtTime(end + 3_600_000));
}
const FIX_DAILY_SQL = `INSERT INTO project_daily_usage (project_id, day, events, emails)
  SELECT ?1, ?2, e.n, m.n FROM
    (SELECT count(*) AS n FROM events WHERE project_id = ?1 AND id >= ?5 AND id < ?6 AND created_at >= ?3 AND created_at < ?4) e,
    (SELECT count(*) AS n FROM emails WHERE project_id = ?1 AND id >= ?5 AND id < ?6 AND created_at >= ?3 AND created_at < ?4) m
  WHERE e.n != coalesce((SELECT events FROM project_daily_usage WHERE project_id = ?1 AND day = ?2), 0)
     OR m.n != coalesce((SELECT emails FROM project_daily_usage WHERE project_id = ?1 AND day = ?2), 0)
  ON CONFLICT (project_id, day) DO UPDATE SET events = excluded.events, emails = excluded.emails
  RETURNING project_id AS projectId, events, emails`;

/** Deletes up to `limit` daily counter rows of days before `beforeDay` (the cron; the quotas read only today's). */
export function pruneDailyCounters(d1: D1Database, beforeDay: number, limit: number): D1PreparedStatement {
  return d1.prepare(PRUNE_DAILY_SQL).bind(beforeDay, limit);
}
const PRUNE_DAILY_SQL = "DELETE FROM project_daily_usage WHERE rowid IN (SELECT rowid FROM project_daily_usage WHERE day < ?1 LIMIT ?2)";

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { USAGE_PAGE_SQL, FIX_CONTACTS_SQL, FIX_DAILY_SQL, PRUNE_DAILY_SQL };
