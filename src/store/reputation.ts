import { eq } from "drizzle-orm";
import { getDb } from "../db/client";
import { projectReputation, projects } from "../db/schema";

/**
 * The reputation breaker's SQL (project_reputation and the projects' sending
 * pause). The counters themselves are written by triggers on emails
 * (migration 0021); these statements read, prune and act on them.
 */

/** What the breaker judges with (see the REPUTATION_* settings). */
export interface ReputationLimits {
  /** First UTC day of the window (day number: ms / 86,400,000). */
  fromDay: number;
  windowDays: number;
  minSent: number;
  maxBounceRate: number;
  maxComplaintRate: number;
}

const REASON = (kind: "Bounce" | "Complaint", count: string, limit: string) =>
  `printf('${kind} rate %.2f%% (%d of %d emails sent) over the last %d days is above the %g%% limit', 100.0 * ${count} / w.sent, ${count}, w.sent, ?6, 100.0 * ${limit})`;

/**
 * Pauses every project not paused yet whose window has at least the minimum
 * volume and a bounce or complaint rate above its limit, with the reason.
 * One statement over the window's counter rows (day index); RETURNING the
 * projects it paused.
 */
const PAUSE_SQL = `UPDATE projects SET sending_paused_at = ?1, updated_at = ?1,
    sending_paused_reason = CASE WHEN w.complained > ?5 * w.sent THEN ${REASON("Complaint", "w.complained", "?5")}
      ELSE ${REASON("Bounce", "w.bounced", "?4")} END
  FROM (SELECT project_id, sum(sent) AS sent, sum(bounced) AS bounced, sum(complained) AS complained
        FROM project_reputation WHERE day >= ?2 GROUP BY project_id HAVING sum(sent) >= ?3) AS w
  WHERE projects.id = w.project_id AND projects.sending_paused_at IS NULL
    AND (w.bounced > ?4 * w.sent OR w.complained > ?5 * w.sent)
  RETURNING projects.id AS id, projects.sending_paused_reason AS reason`;

export function pauseProjectsPastLimits(d1: D1Database, limits: ReputationLimits, now: number): D1PreparedStatement {
  return d1.prepare(PAUSE_SQL).bind(now, limits.fromDay, limits.minSent, limits.maxBounceRate, limits.maxComplaintRate, limits.windowDays);
}

/** Counter rows of days before `beforeDay`, at most `limit` of them (the cron prunes in bounded steps). */
const PRUNE_SQL = `DELETE FROM project_reputation WHERE rowid IN (SELECT rowid FROM project_reputation WHERE day < ?1 LIMIT ?2)`;

export function pruneReputation(d1: D1Database, beforeDay: number, limit: number): D1PreparedStatement {
  return d1.prepare(PRUNE_SQL).bind(beforeDay, limit);
}

/** A project's pause and its window's counts. */
const STATUS_SQL = `SELECT p.sending_paused_at AS pausedAt, p.sending_paused_reason AS reason, p.sending_resumed_at AS resumedAt,
    COALESCE((SELECT sum(sent) FROM project_reputation WHERE project_id = p.id AND day >= ?2), 0) AS sent,
    COALESCE((SELECT sum(bounced) FROM project_reputation WHERE project_id = p.id AND day >= ?2), 0) AS bounced,
    COALESCE((SELECT sum(complained) FROM project_reputation WHERE project_id = p.id AND day >= ?2), 0) AS complained
  FROM projects AS p WHERE p.id = ?1`;

export interface SendingStatusRow {
  pausedAt: number | null;
  reason: string | null;
  resumedAt: number | null;
  sent: number;
  bounced: number;
  complained: number;
}

export function sendingStatusOf(d1: D1Database, projectId: string, fromDay: number): D1PreparedStatement {
  return d1.prepare(STATUS_SQL).bind(projectId, fromDay);
}

/**
 * The owner's resume (API): only a paused project, and only when the owner has
 * not resumed it through the API since `notResumedSince`; sets
 * sending_resumed_at to `now`. Then its counters are cleared (a fresh window),
 * only when this resume happened. Statements for one batch.
 */
const OWNER_RESUME_SQL = `UPDATE projects SET sending_paused_at = NULL, sending_paused_reason = NULL, sending_resumed_at = ?2, updated_at = ?2
  WHERE id = ?1 AND sending_paused_at IS NOT NULL AND (sending_resumed_at IS NULL OR sending_resumed_at < ?3)`;
const CLEAR_AFTER_OWNER_RESUME_SQL = `DELETE FROM project_reputation
  WHERE project_id = ?1 AND EXISTS (SELECT 1 FROM projects WHERE id = ?1 AND sending_resumed_at = ?2 AND sending_paused_at IS NULL)`;

export function ownerResume(d1: D1Database, projectId: string, now: number, notResumedSince: number): D1PreparedStatement[] {
  return [d1.prepare(OWNER_RESUME_SQL).bind(projectId, now, notResumedSince), d1.prepare(CLEAR_AFTER_OWNER_RESUME_SQL).bind(projectId, now)];
}

/**
 * The operator's resume (`npm run project -- resume <id>`), not limited:
 * sending works again with a fresh window (the counters are cleared).
 * Statements for one batch, built by drizzle so the CLI can render them.
 */
export function operatorResume(d1: D1Database, projectId: string, now = new Date()) {
  const db = getDb(d1);
  return [
    db.update(projects).set({ sendingPausedAt: null, sendingPausedReason: null, updatedAt: now }).where(eq(projects.id, projectId)),
    db.delete(projectReputation).where(eq(projectReputation.projectId, projectId)),
  ] as const;
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { PAUSE_SQL, PRUNE_SQL, STATUS_SQL, OWNER_RESUME_SQL, CLEAR_AFTER_OWNER_RESUME_SQL };
