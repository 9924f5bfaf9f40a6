import { and, eq, inArray } from "drizzle-orm";
import { getDb } from "../db/client";
import { workflowExecutions, workflows, type WorkflowExecutionStatus, type WorkflowHistoryEntry } from "../db/schema";

/**
 * The writer of workflow_executions: an execution's start (one guarded INSERT
 * per matching workflow), its progress from inside its steps, and its ends
 * (cancelled, failed before it started). Returned as statements: await one,
 * or add it to a WriteBatch (store/batch.ts).
 */

/** An execution that is still going: its instance may run or wait. */
export const ACTIVE_STATUSES: WorkflowExecutionStatus[] = ["RUNNING", "WAITING"];

export interface ExecutionStart {
  id: string;
  projectId: string;
  workflowId: string;
  workflowVersion: number;
  contactId: string;
  /** One trigger occurrence: a redelivered trigger starts nothing twice (unique per workflow). */
  triggerKey: string;
  now: number;
  /** MAX_ACTIVE_EXECUTIONS_PER_PROJECT: the project's active executions, counted in the INSERT. */
  activeCap: number;
  /** The contact may run the workflow again once its last execution ended (otherwise: once ever). */
  allowReentry: boolean;
}

/**
 * Starts an execution (RUNNING) only when the contact exists, the project is
 * under its cap of active executions, the re-entry rule allows it (allowReentry
 * false: the contact never had an execution of the workflow; true: none is
 * active) and the trigger key is new. One INSERT ... SELECT, so concurrent
 * triggers for one contact start one execution. Returns `id` when started.
 */
export function startExecution(d1: D1Database, s: ExecutionStart): D1PreparedStatement {
  return d1
    .prepare(s.allowReentry ? START_REENTRY_SQL : START_ONCE_SQL)
    .bind(s.id, s.projectId, s.workflowId, s.workflowVersion, s.contactId, s.triggerKey, s.now, s.activeCap);
}
const startSql = (
  earlier: string,
) => `INSERT INTO workflow_executions (id, project_id, workflow_id, workflow_version, contact_id, trigger_key, status, history, started_at, updated_at)
  SELECT ?1, ?2, ?3, ?4, ?5, ?6, 'RUNNING', '[]', ?7, ?7
  WHERE EXISTS (SELECT 1 FROM contacts WHERE id = ?5 AND project_id = ?2)
    AND (SELECT count(*) FROM workflow_executions WHERE project_id = ?2 AND status IN ('RUNNING', 'WAITING')) < ?8
    AND NOT EXISTS (SELECT 1 FROM workflow_executions WHERE workflow_id = ?3 AND contact_id = ?5${earlier})
  ON CONFLICT (workflow_id, trigger_key) DO NOTHING
  RETURNING id`;
const START_ONCE_SQL = startSql("");
const START_REENTRY_SQL = startSql(" AND status IN ('RUNNING', 'WAITING')");

/** The project's active executions (`n`): read after the starts, in their batch, to tell a start the cap refused. */
export function countActiveExecutions(d1: D1Database, projectId: string): D1PreparedStatement {
  return d1.prepare(ACTIVE_COUNT_SQL).bind(projectId);
}
const ACTIVE_COUNT_SQL = "SELECT count(*) AS n FROM workflow_executions WHERE project_id = ?1 AND status IN ('RUNNING', 'WAITING')";

export interface ExecutionProgress {
  status: WorkflowExecutionStatus;
  currentStepId: string | null;
  history: WorkflowHistoryEntry[];
  waitingEvent?: string | null;
  waitingEmailId?: string | null;
  resumeAt?: Date | null;
  error?: string | null;
}

/**
 * An execution's progress, written whole (a retried step writes the same
 * again), only while it is active; returns `id, project_id` when written, none
 * when it was cancelled meanwhile. A final status sets `finishedAt`.
 */
export function recordExecutionProgress(d1: D1Database, executionId: string, update: ExecutionProgress, now: Date) {
  const finished = !ACTIVE_STATUSES.includes(update.status);
  return getDb(d1)
    .update(workflowExecutions)
    .set({
      status: update.status,
      currentStepId: update.currentStepId,
      history: update.history,
      waitingEvent: update.waitingEvent ?? null,
      waitingEmailId: update.waitingEmailId ?? null,
      resumeAt: update.resumeAt ?? null,
      ...(update.error !== undefined ? { error: update.error } : {}),
      ...(finished ? { finishedAt: now } : {}),
      updatedAt: now,
    })
    .where(and(eq(workflowExecutions.id, executionId), inArray(workflowExecutions.status, ACTIVE_STATUSES)))
    .returning({ id: workflowExecutions.id, projectId: workflowExecutions.projectId });
}

/** Active executions CANCELLED with `error`: one by id, or every one of a (deleted) workflow; returns their ids. */
export function cancelExecutions(d1: D1Database, which: { executionId: string } | { workflowId: string }, error: string, now: Date) {
  return getDb(d1)
    .update(workflowExecutions)
    .set({ status: "CANCELLED", finishedAt: now, waitingEvent: null, waitingEmailId: null, resumeAt: null, error, updatedAt: now })
    .where(
      and(
        "executionId" in which ? eq(workflowExecutions.id, which.executionId) : eq(workflowExecutions.workflowId, which.workflowId),
        inArray(workflowExecutions.status, ACTIVE_STATUSES),
      ),
    )
    .returning({ id: workflowExecutions.id });
}

/** Executions still RUNNING whose instance never started: FAILED with `error` (at most IN_LIST_IDS ids). */
export function failUnstartedExecutions(d1: D1Database, executionIds: string[], error: string, now: Date) {
  return getDb(d1)
    .update(workflowExecutions)
    .set({ status: "FAILED", error, finishedAt: now, updatedAt: now })
    .where(and(inArray(workflowExecutions.id, executionIds), eq(workflowExecutions.status, "RUNNING")));
}

/** The module's fixed SQL, by name (test/store/statements.test.ts compiles each against the schema). */
/** Deletes up to `limit` finished executions started before `cutoffId` (UUIDv7) and finished before `beforeMs`, oldest first. */
export function pruneFinishedExecutions(d1: D1Database, cutoffId: string, beforeMs: number, limit: number): D1PreparedStatement {
  return d1.prepare(PRUNE_EXECUTIONS_SQL).bind(cutoffId, beforeMs, limit);
}
const PRUNE_EXECUTIONS_SQL = `DELETE FROM workflow_executions WHERE id IN (
    SELECT id FROM workflow_executions WHERE id < ?1 AND status NOT IN ('RUNNING', 'WAITING') AND finished_at < ?2 ORDER BY id LIMIT ?3)
  RETURNING id`;

/**
 * With disabling a project: its running and waiting executions become
 * CANCELLED (by workflow, on the workflow/status index). Their instances stop
 * at their next step, which checks the execution first.
 */
export function cancelProjectExecutions(d1: D1Database, projectId: string, now = new Date()) {
  const db = getDb(d1);
  return db
    .update(workflowExecutions)
    .set({ status: "CANCELLED", finishedAt: now, waitingEvent: null, waitingEmailId: null, resumeAt: null, error: "The project is disabled", updatedAt: now })
    .where(
      and(
        inArray(workflowExecutions.workflowId, db.select({ id: workflows.id }).from(workflows).where(eq(workflows.projectId, projectId))),
        inArray(workflowExecutions.status, ["RUNNING", "WAITING"]),
      ),
    );
}

export const FIXED_SQL = { START_ONCE_SQL, START_REENTRY_SQL, ACTIVE_COUNT_SQL, PRUNE_EXECUTIONS_SQL };
