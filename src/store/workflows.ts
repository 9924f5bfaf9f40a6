import { and, eq, isNull } from "drizzle-orm";
import { getDb } from "../db/client";
import { workflows, workflowVersions } from "../db/schema";

/**
 * Workflows and their versions (a definition's every change of steps or
 * trigger is a version, kept while an execution may read it), and their
 * retention as a bounded statement for the cron. Definitions are built by
 * drizzle, the pruning is fixed SQL.
 */

export type NewWorkflow = typeof workflows.$inferInsert;
export type NewWorkflowVersion = typeof workflowVersions.$inferInsert;
export type WorkflowChange = Partial<Omit<NewWorkflow, "id" | "projectId" | "createdAt">>;

/** The workflow (returning its row) and its first version, for one batch. */
export function insertWorkflow(d1: D1Database, row: NewWorkflow, first: NewWorkflowVersion) {
  const db = getDb(d1);
  return [db.insert(workflows).values(row).returning(), db.insert(workflowVersions).values(first)] as const;
}

/**
 * Applies the change only while the workflow is at `expectedVersion` and not
 * deleted, so two concurrent edits fail one of them instead of sharing a
 * version number; returns the row, none otherwise.
 */
export function updateWorkflow(d1: D1Database, projectId: string, id: string, expectedVersion: number, set: WorkflowChange) {
  return getDb(d1)
    .update(workflows)
    .set(set)
    .where(and(eq(workflows.id, id), eq(workflows.projectId, projectId), eq(workflows.version, expectedVersion), isNull(workflows.deletedAt)))
    .returning();
}

/** A new version of a definition (in the batch of its updateWorkflow). */
export function insertWorkflowVersion(d1: D1Database, row: NewWorkflowVersion) {
  return getDb(d1).insert(workflowVersions).values(row);
}

/** Marks the workflow deleted and disabled (its versions stay for retention); returns its id, none when there was no such workflow. */
export function markWorkflowDeleted(d1: D1Database, projectId: string, id: string, now: Date) {
  return getDb(d1)
    .update(workflows)
    .set({ deletedAt: now, enabled: false, updatedAt: now })
    .where(and(eq(workflows.id, id), eq(workflows.projectId, projectId), isNull(workflows.deletedAt)))
    .returning({ id: workflows.id });
}

/**
 * Deletes up to `limit` workflow versions that nothing will read again: not
 * the current one (unless the workflow is deleted), superseded (or deleted)
 * before `beforeMs` so an execution being started on it has read it by then,
 * and run by no RUNNING or WAITING execution. The workflow_versions_bytes_delete
 * trigger takes their bytes off the project's count.
 */
export function pruneWorkflowVersions(d1: D1Database, beforeMs: number, limit: number): D1PreparedStatement {
  return d1.prepare(PRUNE_VERSIONS_SQL).bind(beforeMs, limit);
}
const PRUNE_VERSIONS_SQL = `DELETE FROM workflow_versions WHERE rowid IN (
    SELECT v.rowid FROM workflow_versions v JOIN workflows w ON w.id = v.workflow_id
    WHERE (v.version < w.version OR w.deleted_at IS NOT NULL)
      AND coalesce((SELECT min(n.created_at) FROM workflow_versions n WHERE n.workflow_id = v.workflow_id AND n.version > v.version), w.deleted_at) < ?1
      AND NOT EXISTS (SELECT 1 FROM workflow_executions x
        WHERE x.workflow_id = v.workflow_id AND x.status IN ('RUNNING', 'WAITING') AND x.workflow_version = v.version)
    LIMIT ?2)
  RETURNING workflow_id`;

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { PRUNE_VERSIONS_SQL };
