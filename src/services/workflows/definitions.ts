import { and, count, eq, inArray, isNull } from "drizzle-orm";
import { chunks, IN_LIST_IDS } from "../../lib/chunks";
import { fromRow, type Database } from "../../db/client";
import { templates, topics, workflowExecutions, workflows, type Workflow, type WorkflowExecutionStatus } from "../../db/schema";
import type { Env } from "../../env";
import { ApiError, type FieldError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { listNewestFirst } from "../../lib/pagination";
import { requireEncryptionKey } from "../../lib/config";
import { sealSecret } from "../../lib/crypto";
import { cancelExecutionsOf } from "./executions";
import type { CreateWorkflowInput, UpdateWorkflowInput, WorkflowStats, WorkflowStep, WorkflowTrigger, WorkflowView } from "../../schemas/workflows";
import { newWebhookSecret } from "../../lib/standard-webhooks";
import { outboundUrlProblem } from "../../outside/outbound-url";
import { writeWithinQuotas } from "../quotas";
import { insertWorkflow, insertWorkflowVersion, markWorkflowDeleted, updateWorkflow as updateWorkflowRow, type WorkflowChange } from "../../store/workflows";

const emptyStats = (): WorkflowStats => ({ running: 0, waiting: 0, completed: 0, exited: 0, failed: 0, cancelled: 0 });

export function triggerOf(row: { triggerType: Workflow["triggerType"]; triggerEvent: string | null }): WorkflowTrigger {
  return row.triggerType === "EVENT" ? { type: "EVENT", eventName: row.triggerEvent ?? "" } : { type: row.triggerType };
}

export function toWorkflowView(workflow: Workflow, stats: WorkflowStats = emptyStats()): WorkflowView {
  return {
    id: workflow.id,
    name: workflow.name,
    description: workflow.description ?? null,
    enabled: workflow.enabled,
    trigger: triggerOf(workflow),
    allowReentry: workflow.allowReentry,
    allowPublicEvents: workflow.allowPublicEvents,
    steps: workflow.steps as WorkflowStep[],
    version: workflow.version,
    stats,
    createdAt: workflow.createdAt.toISOString(),
    updatedAt: workflow.updatedAt.toISOString(),
  };
}

/** Executions by status for each workflow, in one grouped query (at most 100 ids: a page). */
export async function workflowStats(db: Database, workflowIds: string[]): Promise<Map<string, WorkflowStats>> {
  const out = new Map(workflowIds.map((id) => [id, emptyStats()]));
  if (workflowIds.length === 0) return out;
  const rows = await db
    .select({ workflowId: workflowExecutions.workflowId, status: workflowExecutions.status, n: count() })
    .from(workflowExecutions)
    .where(inArray(workflowExecutions.workflowId, workflowIds))
    .groupBy(workflowExecutions.workflowId, workflowExecutions.status);
  for (const row of rows) {
    const stats = out.get(row.workflowId);
    if (stats) stats[row.status.toLowerCase() as keyof WorkflowStats] = row.n;
  }
  return out;
}

/** Where each step can lead: [field under the step, target step id]. */
export function edgesOf(step: WorkflowStep): [string, string][] {
  const edges: [string, string | null | undefined][] = [];
  if (step.type === "WAIT_FOR_EVENT") edges.push(["branches.event", step.branches?.event], ["branches.timeout", step.branches?.timeout]);
  else if (step.type === "CONDITION") edges.push(["branches.yes", step.branches?.yes], ["branches.no", step.branches?.no]);
  else if (step.type !== "EXIT") edges.push(["next", step.next]);
  return edges.filter((e): e is [string, string] => typeof e[1] === "string");
}

/**
 * The graph rules: unique ids, every `next`/branch names an existing step, no
 * cycle, every step reachable from the first. Each problem names its step.
 */
export function graphErrors(steps: WorkflowStep[]): FieldError[] {
  const errors: FieldError[] = [];
  const index = new Map<string, number>();
  steps.forEach((step, i) => {
    if (index.has(step.id)) errors.push({ field: `steps.${i}.id`, message: `Step id "${step.id}" is used twice`, code: "duplicate_step_id" });
    else index.set(step.id, i);
  });
  steps.forEach((step, i) => {
    for (const [field, target] of edgesOf(step)) {
      if (!index.has(target)) {
        errors.push({
          field: `steps.${i}.${field}`,
          message: `Step "${step.id}" leads to "${target}", which is not a step of this workflow`,
          code: "unknown_step",
        });
      }
    }
  });
  if (errors.length > 0 || steps.length === 0) return errors;

  // Depth-first from the entry: a step met again while still on the path is a cycle.
  const state = new Map<string, "active" | "done">();
  const walk = (id: string) => {
    state.set(id, "active");
    const i = index.get(id)!;
    for (const [field, target] of edgesOf(steps[i])) {
      if (state.get(target) === "active") {
        errors.push({ field: `steps.${i}.${field}`, message: `Step "${id}" leads back to "${target}": workflows cannot loop`, code: "cycle" });
      } else if (!state.has(target)) walk(target);
    }
    state.set(id, "done");
  };
  walk(steps[0].id); // at most 100 steps deep
  steps.forEach((step, i) => {
    if (!state.has(step.id)) {
      errors.push({ field: `steps.${i}`, message: `Step "${step.id}" cannot be reached from the first step ("${steps[0].id}")`, code: "unreachable_step" });
    }
  });
  return errors;
}

/** Every check of a definition that needs the project (templates) or the environment (webhook URLs). */
async function definitionErrors(db: Database, env: Env, projectId: string, steps: WorkflowStep[]): Promise<FieldError[]> {
  const errors = graphErrors(steps);
  const templateIds = [...new Set(steps.flatMap((s) => (s.type === "SEND_EMAIL" ? [s.config.templateId] : [])))];
  const found = new Map<string, { from: string | null }>();
  for (const ids of chunks(templateIds, IN_LIST_IDS)) {
    const rows = await db
      .select({ id: templates.id, from: templates.from })
      .from(templates)
      .where(and(eq(templates.projectId, projectId), inArray(templates.id, ids)));
    for (const row of rows) found.set(row.id, row);
  }
  const topicKeys = [...new Set(steps.flatMap((s) => (s.type === "SEND_EMAIL" && s.config.topic ? [s.config.topic] : [])))];
  const knownTopics = new Set<string>();
  for (const keys of chunks(topicKeys, IN_LIST_IDS)) {
    const rows = await db
      .select({ key: topics.key })
      .from(topics)
      .where(and(eq(topics.projectId, projectId), inArray(topics.key, keys)));
    for (const row of rows) knownTopics.add(row.key);
  }
  steps.forEach((step, i) => {
    if (step.type === "SEND_EMAIL" && step.config.topic && !knownTopics.has(step.config.topic)) {
      errors.push({
        field: `steps.${i}.config.topic`,
        message: `Step "${step.id}": no topic with key ${step.config.topic} in this project`,
        code: "unknown_topic",
      });
    }
    if (step.type === "SEND_EMAIL") {
      const template = found.get(step.config.templateId);
      if (!template) {
        errors.push({ field: `steps.${i}.config.templateId`, message: `Step "${step.id}": template not found`, code: "unknown_template" });
      } else if (!template.from) {
        errors.push({
          field: `steps.${i}.config.templateId`,
          message: `Step "${step.id}": the template has no from address; set one on the template (PATCH /templates/{id})`,
          code: "template_without_from",
        });
      }
    } else if (step.type === "WAIT_FOR_EVENT" && step.config.replyTo !== undefined) {
      const target = steps.find((t) => t.id === step.config.replyTo);
      if (step.config.eventName !== "email.received") {
        errors.push({
          field: `steps.${i}.config.replyTo`,
          message: `Step "${step.id}": replyTo waits for a reply, so eventName must be email.received`,
          code: "invalid",
        });
      } else if (target?.type !== "SEND_EMAIL") {
        errors.push({
          field: `steps.${i}.config.replyTo`,
          message: `Step "${step.id}": replyTo must name a SEND_EMAIL step of this workflow`,
          code: "unknown_step",
        });
      }
    } else if (step.type === "WEBHOOK") {
      const problem = outboundUrlProblem(step.config.url, env);
      if (problem) errors.push({ field: `steps.${i}.config.url`, message: `Step "${step.id}": ${problem}`, code: "invalid_url" });
    }
  });
  return errors;
}

async function assertDefinition(db: Database, env: Env, projectId: string, steps: WorkflowStep[]) {
  const errors = await definitionErrors(db, env, projectId, steps);
  if (errors.length > 0) throw ApiError.validation(errors);
}

function resolveTrigger(input: { trigger?: WorkflowTrigger; eventName?: string }): WorkflowTrigger | undefined {
  if (input.trigger && input.eventName !== undefined) {
    if (input.trigger.type !== "EVENT" || input.trigger.eventName !== input.eventName) {
      throw ApiError.validation([{ field: "eventName", message: "eventName disagrees with trigger; send one of them", code: "conflict" }]);
    }
  }
  return input.trigger ?? (input.eventName !== undefined ? { type: "EVENT", eventName: input.eventName } : undefined);
}

const triggerColumns = (trigger: WorkflowTrigger) => ({
  triggerType: trigger.type,
  triggerEvent: trigger.type === "EVENT" ? trigger.eventName : null,
});

/** Most workflows (not deleted) one project may have: each trigger can start every one of them. */
export const MAX_WORKFLOWS_PER_PROJECT = 50;

export async function createWorkflow(db: Database, env: Env, projectId: string, input: CreateWorkflowInput) {
  const [{ n }] = await db
    .select({ n: count() })
    .from(workflows)
    .where(and(eq(workflows.projectId, projectId), isNull(workflows.deletedAt)));
  if (n >= MAX_WORKFLOWS_PER_PROJECT) {
    throw new ApiError("QUOTA_EXCEEDED", `A project may have at most ${MAX_WORKFLOWS_PER_PROJECT} workflows`, {
      suggestion: "Delete a workflow you no longer use, or combine workflows with CONDITION steps.",
    });
  }
  const trigger = resolveTrigger(input);
  if (!trigger) {
    throw ApiError.validation([
      {
        field: "trigger",
        message: 'A trigger is required: {type: "EVENT", eventName}, CONTACT_CREATED or CONTACT_SUBSCRIBED (or eventName)',
        code: "required",
      },
    ]);
  }
  await assertDefinition(db, env, projectId, input.steps);
  const id = newId();
  const webhookSecret = newWebhookSecret();
  const encrypted = await sealSecret(requireEncryptionKey(env), webhookSecretContext(id), webhookSecret);
  const now = new Date();
  // The version's steps count toward QUOTA_STORED_BYTES, checked in the same batch.
  const [inserted] = await writeWithinQuotas(db, env, projectId, [
    ...insertWorkflow(
      db.$client,
      {
        id,
        projectId,
        name: input.name,
        description: input.description ?? null,
        enabled: input.enabled ?? false,
        allowReentry: input.allowReentry ?? false,
        allowPublicEvents: input.allowPublicEvents ?? false,
        version: 1,
        ...triggerColumns(trigger),
        steps: input.steps,
        webhookSecretEncrypted: encrypted,
        createdAt: now,
        updatedAt: now,
      },
      { workflowId: id, version: 1, ...triggerColumns(trigger), steps: input.steps, createdAt: now },
    ),
  ]);
  return { workflow: fromRow(workflows, inserted[0]), webhookSecret };
}

/** The additional data binding an encrypted webhook secret to its workflow. */
export const webhookSecretContext = (workflowId: string) => `workflow-webhook:${workflowId}`;

export async function getWorkflow(db: Database, projectId: string, id: string): Promise<Workflow> {
  const workflow = await db.query.workflows.findFirst({
    where: and(eq(workflows.id, id), eq(workflows.projectId, projectId), isNull(workflows.deletedAt)),
  });
  if (!workflow) throw ApiError.notFound("Workflow");
  return workflow;
}

/**
 * Applies the fields given. Changing the steps or the trigger makes a new
 * version (kept in workflow_versions); executions already running keep the
 * version they started on.
 */
export async function updateWorkflow(db: Database, env: Env, projectId: string, id: string, input: UpdateWorkflowInput) {
  const current = await getWorkflow(db, projectId, id);
  const trigger = resolveTrigger(input);
  const set: WorkflowChange = {};
  if (input.name !== undefined) set.name = input.name;
  if (input.description !== undefined) set.description = input.description;
  if (input.enabled !== undefined) set.enabled = input.enabled;
  if (input.allowReentry !== undefined) set.allowReentry = input.allowReentry;
  if (input.allowPublicEvents !== undefined) set.allowPublicEvents = input.allowPublicEvents;
  const newTrigger = trigger ?? triggerOf(current);
  const newSteps = (input.steps ?? current.steps) as WorkflowStep[];
  const definitionChanged = JSON.stringify(newTrigger) !== JSON.stringify(triggerOf(current)) || JSON.stringify(newSteps) !== JSON.stringify(current.steps);
  if (input.steps !== undefined) await assertDefinition(db, env, projectId, input.steps);
  if (Object.keys(set).length === 0 && !definitionChanged) return current;
  const now = new Date();
  const version = definitionChanged ? current.version + 1 : current.version;
  Object.assign(set, { updatedAt: now, version, ...triggerColumns(newTrigger), steps: newSteps });
  // The version check makes two concurrent edits fail one of them instead of sharing a number.
  const update = updateWorkflowRow(db.$client, projectId, id, current.version, set);
  // A new version: within QUOTA_WORKFLOW_VERSIONS (this workflow's stored versions) and QUOTA_STORED_BYTES.
  const workflow = definitionChanged
    ? await writeWithinQuotas(
        db,
        env,
        projectId,
        [update, insertWorkflowVersion(db.$client, { workflowId: id, version, ...triggerColumns(newTrigger), steps: newSteps, createdAt: now })],
        { quota: "QUOTA_WORKFLOW_VERSIONS", owner: id },
      ).then(([rows]) => (rows[0] ? fromRow(workflows, rows[0]) : undefined))
    : (await update)[0];
  if (!workflow) throw new ApiError("CONFLICT", "The workflow changed while this update was applied", { suggestion: "Read it again and retry." });
  return workflow;
}

/**
 * Deletes a workflow: it stops matching triggers at once, its running and
 * waiting executions become CANCELLED, and their instances are terminated
 * through the workflow queue (they also stop by themselves at their next step).
 */
export async function deleteWorkflow(db: Database, env: Env, projectId: string, id: string): Promise<void> {
  const now = new Date();
  const deleted = await markWorkflowDeleted(db.$client, projectId, id, now);
  if (deleted.length === 0) throw ApiError.notFound("Workflow");
  await cancelExecutionsOf(db, env, id);
}

export async function listWorkflows(db: Database, projectId: string, query: { limit: number; cursor?: string }) {
  const page = await listNewestFirst(db, workflows, and(eq(workflows.projectId, projectId), isNull(workflows.deletedAt)), query);
  const stats = await workflowStats(
    db,
    page.items.map((w) => w.id),
  );
  return { ...page, items: page.items.map((w) => toWorkflowView(w, stats.get(w.id))) };
}

export type { WorkflowExecutionStatus };
