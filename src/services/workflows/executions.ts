import { and, eq, type SQL } from "drizzle-orm";
import { chunks } from "../../lib/chunks";
import type { Database } from "../../db/client";
import { projects, workflowExecutions, type WorkflowExecution, type WorkflowExecutionStatus } from "../../db/schema";
import type { Env } from "../../env";
import type { AfterCommit } from "../../lib/after-commit";
import { WriteBatch } from "../../store/batch";
import { ApiError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { listNewestFirst } from "../../lib/pagination";
import { recordExecutionWebhookEvent } from "../../store/webhooks/events";
import { ACTIVE_STATUSES, cancelExecutions, type ExecutionProgress, recordExecutionProgress } from "../../store/executions";
import type { ExecutionView } from "../../schemas/workflows";

import { enqueueWorkflowMessages } from "../../queues";

export type { ExecutionParams, WorkflowQueueMessage } from "../../messages";

export { ACTIVE_STATUSES };
export const TERMINATE_IDS_PER_MESSAGE = 10;

export function toExecutionView(row: WorkflowExecution): ExecutionView {
  return {
    id: row.id,
    workflowId: row.workflowId,
    workflowVersion: row.workflowVersion,
    contactId: row.contactId,
    status: row.status,
    currentStepId: row.currentStepId ?? null,
    resumeAt: row.resumeAt ? row.resumeAt.toISOString() : null,
    error: row.error ?? null,
    history: row.history ?? [],
    startedAt: row.startedAt.toISOString(),
    finishedAt: row.finishedAt ? row.finishedAt.toISOString() : null,
  };
}

export interface ListExecutionsQuery {
  limit: number;
  cursor?: string;
  status?: WorkflowExecutionStatus;
  contactId?: string;
}

/** Newest first (ids are UUIDv7), served by the (workflow_id, [status | contact_id], id) indexes. */
export async function listExecutions(db: Database, workflowId: string, query: ListExecutionsQuery) {
  const filters: SQL[] = [eq(workflowExecutions.workflowId, workflowId)];
  if (query.status) filters.push(eq(workflowExecutions.status, query.status));
  if (query.contactId) filters.push(eq(workflowExecutions.contactId, query.contactId));
  const page = await listNewestFirst(db, workflowExecutions, and(...filters), query);
  return { ...page, items: page.items.map(toExecutionView) };
}

export async function getExecution(db: Database, workflowId: string, executionId: string): Promise<WorkflowExecution> {
  const row = await db.query.workflowExecutions.findFirst({
    where: and(eq(workflowExecutions.id, executionId), eq(workflowExecutions.workflowId, workflowId)),
  });
  if (!row) throw ApiError.notFound("Execution");
  return row;
}

export type ProgressUpdate = ExecutionProgress;

/**
 * Writes an execution's progress from inside a step. Only a RUNNING or WAITING
 * execution changes: false means it was cancelled (its workflow was deleted)
 * and the instance should stop. The whole history is written each time, so a
 * retried step writes the same thing again.
 */
export async function recordProgress(
  db: Database,
  executionId: string,
  update: ProgressUpdate,
  /** Where the webhook event the write recorded leaves (the step's door). */
  afterCommit?: AfterCommit,
): Promise<boolean> {
  const now = new Date();
  const query = recordExecutionProgress(db.$client, executionId, update, now);
  // workflow.execution.completed (COMPLETED or EXITED) / .failed, in the batch that finishes the execution.
  const type =
    update.status === "FAILED"
      ? "workflow.execution.failed"
      : update.status === "COMPLETED" || update.status === "EXITED"
        ? "workflow.execution.completed"
        : null;
  if (!type) return (await query).length > 0;
  const batch = new WriteBatch(db.$client);
  const updated = batch.add(query);
  batch.add(recordExecutionWebhookEvent(db.$client, { id: newId(), executionId, type, at: now }));
  return (await batch.run({ afterCommit })).rows(updated).length > 0;
}

/**
 * Whether an execution may do its next step: still active, and its project not
 * disabled. An active execution of a disabled project is CANCELLED here, so it
 * stops before doing anything more. One read in the usual case.
 */
export async function executionMayContinue(db: Database, executionId: string, projectId: string): Promise<boolean> {
  const [row] = await db
    .select({ status: workflowExecutions.status, disabled: projects.disabled })
    .from(workflowExecutions)
    .innerJoin(projects, eq(projects.id, workflowExecutions.projectId))
    .where(and(eq(workflowExecutions.id, executionId), eq(workflowExecutions.projectId, projectId)));
  if (!row || !ACTIVE_STATUSES.includes(row.status)) return false;
  if (!row.disabled) return true;
  await cancelExecutions(db.$client, { executionId }, PROJECT_DISABLED_ERROR, new Date());
  return false;
}

export const PROJECT_DISABLED_ERROR = "The project is disabled";

/**
 * Marks a deleted workflow's running and waiting executions CANCELLED and
 * queues the termination of their instances (10 per message, 100 messages per
 * sendBatch). An instance that is not reached stops at its next step anyway:
 * every step checks its execution is still active.
 */
export async function cancelExecutionsOf(db: Database, env: Env, workflowId: string): Promise<number> {
  const cancelled = await cancelExecutions(db.$client, { workflowId }, "The workflow was deleted", new Date());
  const ids = cancelled.map((r) => r.id);
  // The executions are CANCELLED in D1; an instance a lost message does not reach stops at its next step.
  await enqueueWorkflowMessages(
    env,
    chunks(ids, TERMINATE_IDS_PER_MESSAGE).map((executionIds) => ({ kind: "terminate", executionIds })),
    { onFailure: "log" },
  );
  return ids.length;
}
