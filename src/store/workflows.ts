import { and, eq, inArray, isNull } from "drizzle-orm";
import { getDb } from "../db/client";
import { workflowExecutions, workflows, workflowVersions } from "../db/schema";

/**
 * Workflows and their versions (a definition's every change of steps or
 * trigger is a version, kept while an execution may read it); retention of
 * the workflow tables as bounded statements for the cron; the double opt-in
 * trigger statements. Definitions are built by drizzle, the rest is fixed SQL.
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

/** Deletes up to `limit` finished executions started before `cutoffId` (UUIDv7) and finished before `beforeMs`, oldest first. */
export function pruneFinishedExecutions(d1: D1Database, cutoffId: string, beforeMs: number, limit: number): D1PreparedStatement {
  return d1.prepare(PRUNE_EXECUTIONS_SQL).bind(cutoffId, beforeMs, limit);
}
const PRUNE_EXECUTIONS_SQL = `DELETE FROM workflow_executions WHERE id IN (
    SELECT id FROM workflow_executions WHERE id < ?1 AND status NOT IN ('RUNNING', 'WAITING') AND finished_at < ?2 ORDER BY id LIMIT ?3)
  RETURNING id`;

// ---- double opt-in: CONTACT_CREATED waits for the confirmation ----------------

/**
 * For a double opt-in batch, after the upsert: removes the CONTACT_CREATED
 * trigger the D1 trigger of migration 0006 queued for `contactId`, the id the
 * batch gives the contact if it creates it (a fresh id, so only this batch's
 * row can match; the batch is one transaction, so no drain sees it first).
 */
export function dropContactCreatedTrigger(d1: D1Database, projectId: string, contactId: string): D1PreparedStatement {
  return d1.prepare(DROP_CONTACT_CREATED_SQL).bind(projectId, contactId);
}
const DROP_CONTACT_CREATED_SQL = `DELETE FROM workflow_trigger_outbox WHERE project_id = ?1 AND contact_id = ?2 AND kind = 'CONTACT_CREATED'`;

/**
 * For the confirm batch, first (before it records the confirmation): queues
 * the CONTACT_CREATED trigger the unconfirmed contact did not fire, only when
 * the contact is still unsubscribed, this confirmation email (?3) has not
 * confirmed it before (its `contact.subscribed` event), and an enabled
 * CONTACT_CREATED workflow exists. Once per contact either way: the execution's
 * trigger key is `created:<contact>`.
 */
export function queueConfirmedContactCreated(d1: D1Database, projectId: string, contactId: string, emailId: string, now: number): D1PreparedStatement {
  return d1.prepare(QUEUE_CONFIRMED_CREATED_SQL).bind(projectId, contactId, emailId, now);
}
const QUEUE_CONFIRMED_CREATED_SQL = `INSERT INTO workflow_trigger_outbox (project_id, contact_id, kind, created_at)
  SELECT ?1, ?2, 'CONTACT_CREATED', ?4
  WHERE EXISTS (SELECT 1 FROM contacts WHERE id = ?2 AND project_id = ?1 AND subscribed = 0)
    AND NOT EXISTS (SELECT 1 FROM events WHERE contact_id = ?2 AND name = 'contact.subscribed' AND email_id = ?3)
    AND EXISTS (SELECT 1 FROM workflows WHERE project_id = ?1 AND enabled = 1 AND deleted_at IS NULL AND trigger_type = 'CONTACT_CREATED')`;

/**
 * With disabling a project: its running and waiting executions become
 * CANCELLED (by workflow, on the workflow/status index). Their instances stop
 * at their next step, which checks the execution first.
 */
export function cancelProjectExecutions(d1: D1Database, projectId: string, now = new Date()) {
  const db = getDb(d1);
  return db
    .update(workflowExecutions)
    .set({ status: "CANCELLED", finishedAt: now, waitingEvent: null, resumeAt: null, error: "The project is disabled", updatedAt: now })
    .where(
      and(
        inArray(workflowExecutions.workflowId, db.select({ id: workflows.id }).from(workflows).where(eq(workflows.projectId, projectId))),
        inArray(workflowExecutions.status, ["RUNNING", "WAITING"]),
      ),
    );
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
export const FIXED_SQL = { PRUNE_VERSIONS_SQL, PRUNE_EXECUTIONS_SQL, DROP_CONTACT_CREATED_SQL, QUEUE_CONFIRMED_CREATED_SQL };
