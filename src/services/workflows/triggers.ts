import { shardField, shardOf } from "../../db/shards";
import { and, eq, inArray, isNull, or, sql } from "drizzle-orm";
import { chunks, IN_LIST_IDS } from "../../lib/chunks";
import type { Database } from "../../db/client";
import { getDb } from "../../db/client";
import { events, projects, workflowExecutions, workflows } from "../../db/schema";
import type { Env } from "../../env";
import { newId } from "../../lib/ids";
import { readConfig } from "../../lib/config";
import { ACTIVE_STATUSES, type ExecutionParams, type WorkflowQueueMessage } from "./executions";
import { ACK, retryAfter, type QueuedMessage, type Verdict } from "../../lib/queue-consumer";
import { enqueueWorkflowMessages } from "../../queues";
import { WriteBatch } from "../../store/batch";
import { countActiveExecutions, failUnstartedExecutions, startExecution } from "../../store/executions";
import { claimOutboxPage, restoreOutboxRows } from "../../store/workflow-outbox";

/** Instances per Workflows createBatch call (its limit). */
const WORKFLOW_CREATE_BATCH = 100;

/** Outbox rows handed to the queue per drain (one sendBatch). */
const OUTBOX_PAGE = 100;
/** Most workflows one trigger starts, and most waiting executions one event resumes. */
const MAX_MATCHES = 100;

type TriggerMessage = Extract<WorkflowQueueMessage, { kind: "trigger" }>;

/** The event type a WAIT_FOR_EVENT step waits for: derived from its step id (an allowed event type). */
export const waitEventType = (stepId: string) => `wait-${stepId}`;

/**
 * Moves up to 100 outbox rows (of one project, or of any) to the workflow
 * queue. The rows are claimed by deleting them (DELETE ... RETURNING), so two
 * drains never hand the same row over; if the queue refuses them they are put
 * back for the next drain. Returns how many were handed over.
 */
export async function dispatchWorkflowTriggers(db: Database, env: Env, projectId?: string): Promise<number> {
  const rows = await claimOutboxPage(db.$client, OUTBOX_PAGE, projectId);
  if (rows.length === 0) return 0;
  try {
    await enqueueWorkflowMessages(
      env,
      rows.map(
        (row) =>
          ({
            kind: "trigger",
            outboxId: row.id,
            projectId: row.projectId,
            contactId: row.contactId,
            type: row.kind,
            eventName: row.eventName ?? null,
            eventId: row.eventId ?? null,
          }) satisfies TriggerMessage,
      ),
    );
  } catch (err) {
    console.error("queueing workflow triggers failed; they stay in the outbox", err);
    const restore = new WriteBatch(db.$client);
    restore.add(...restoreOutboxRows(db.$client, rows));
    await restore.run();
    return 0;
  }
  return rows.length;
}

/** The cron's share: drains every project's outbox, at most 10 pages per tick. */
export async function dispatchAllWorkflowTriggers(env: Env): Promise<number> {
  const db = getDb(env.DB);
  let total = 0;
  for (let i = 0; i < 10; i++) {
    const n = await dispatchWorkflowTriggers(db, env);
    total += n;
    if (n < OUTBOX_PAGE) break;
  }
  return total;
}

/** The identity of one trigger occurrence: a redelivered message maps to the same key, so it starts nothing twice. */
function triggerKey(message: TriggerMessage): string {
  if (message.type === "EVENT") return `event:${message.eventId}`;
  if (message.type === "CONTACT_CREATED") return `created:${message.contactId}`;
  return `subscribed:${message.outboxId}`;
}

/** The project is not disabled: a disabled project starts and resumes nothing. */
const projectActive = (projectId: string) => sql`NOT EXISTS (SELECT 1 FROM ${projects} WHERE ${projects.id} = ${projectId} AND ${projects.disabled} = 1)`;

/**
 * The workflow may act on this trigger: any trigger but an event a public key
 * (pk_) recorded, which counts only for workflows with allowPublicEvents.
 */
function acceptsTrigger(message: TriggerMessage) {
  if (message.type !== "EVENT" || !message.eventId) return undefined;
  return or(
    eq(workflows.allowPublicEvents, true),
    sql`NOT EXISTS (SELECT 1 FROM ${events} WHERE ${events.id} = ${message.eventId} AND ${events.source} = 'public')`,
  );
}

/** Sends the event to the contact's executions waiting for it (an indexed lookup, then sendEvent). */
async function resumeWaiting(db: Database, env: Env, message: TriggerMessage) {
  if (message.type !== "EVENT" || !message.eventName) return;
  const waiting = await db
    .select({ id: workflowExecutions.id, stepId: workflowExecutions.currentStepId })
    .from(workflowExecutions)
    .innerJoin(workflows, eq(workflows.id, workflowExecutions.workflowId))
    .where(
      and(
        eq(workflowExecutions.contactId, message.contactId),
        eq(workflowExecutions.waitingEvent, message.eventName),
        // A wait for a reply to one email: only an event of that email (email.received names it as its email_id).
        or(
          isNull(workflowExecutions.waitingEmailId),
          sql`${workflowExecutions.waitingEmailId} = (SELECT ${events.emailId} FROM ${events} WHERE ${events.id} = ${message.eventId ?? null})`,
        ),
        eq(workflowExecutions.status, "WAITING"),
        eq(workflowExecutions.projectId, message.projectId),
        projectActive(message.projectId),
        acceptsTrigger(message),
      ),
    )
    .limit(MAX_MATCHES);
  await Promise.all(
    waiting.map(async (execution) => {
      const instance = await env.AUTOMATIONS.get(execution.id);
      await instance.sendEvent({ type: waitEventType(execution.stepId ?? ""), payload: { eventId: message.eventId, eventName: message.eventName } });
    }),
  );
}

/**
 * Starts the enabled workflows this trigger matches. Each start is one
 * INSERT that only succeeds when the re-entry rule allows it (allowReentry
 * false: the contact never had an execution of the workflow; true: none is
 * running) and the trigger key is new; D1 runs it atomically, so concurrent
 * triggers for one contact start one execution. Returns the instances to create.
 */
async function startExecutions(db: Database, env: Env, message: TriggerMessage): Promise<{ id: string; params: ExecutionParams }[]> {
  const matching = await db
    .select({ id: workflows.id, version: workflows.version, allowReentry: workflows.allowReentry })
    .from(workflows)
    .where(
      and(
        eq(workflows.projectId, message.projectId),
        eq(workflows.triggerType, message.type),
        message.type === "EVENT" ? eq(workflows.triggerEvent, message.eventName ?? "") : isNull(workflows.triggerEvent),
        eq(workflows.enabled, true),
        isNull(workflows.deletedAt),
        projectActive(message.projectId),
        acceptsTrigger(message),
      ),
    )
    .limit(MAX_MATCHES);
  if (matching.length === 0) return [];
  const key = triggerKey(message);
  const now = Date.now();
  const planned = matching.map((workflow) => ({ workflow, id: newId() }));
  // The cap on active executions is a condition of each INSERT: exact however many consumers run at once.
  const activeCap = readConfig(env).MAX_ACTIVE_EXECUTIONS_PER_PROJECT;
  // One atomic batch: each start, then the active count after them (to tell a start the cap refused).
  const batch = new WriteBatch(env.DB);
  const starts = planned.map(({ workflow, id }) =>
    batch.add(
      startExecution(env.DB, {
        id,
        projectId: message.projectId,
        workflowId: workflow.id,
        workflowVersion: workflow.version,
        contactId: message.contactId,
        triggerKey: key,
        now,
        activeCap,
        allowReentry: workflow.allowReentry,
      }),
    ),
  );
  const active = batch.add(countActiveExecutions(env.DB, message.projectId));
  const result = await batch.run();
  const started = planned.map((_, i) => result.rows(starts[i]).length > 0);
  const activeNow = Number(result.rows(active)[0]?.n ?? 0);
  if (activeNow >= activeCap && started.includes(false)) {
    console.warn(
      `workflow trigger ${key} of project ${message.projectId}: not started for some workflows, the project has ${activeNow} active executions (MAX_ACTIVE_EXECUTIONS_PER_PROJECT ${activeCap})`,
    );
  }
  const toCreate: { id: string; params: ExecutionParams }[] = [];
  const paramsFor = (id: string, workflow: (typeof matching)[number], version = workflow.version): ExecutionParams => ({
    executionId: id,
    projectId: message.projectId,
    workflowId: workflow.id,
    version,
    contactId: message.contactId,
    eventId: message.eventId,
    // The instance's steps run on the project's data shard (src/index.ts).
    ...shardField(shardOf(env)),
  });
  planned.forEach(({ workflow, id }, i) => {
    if (started[i]) toCreate.push({ id, params: paramsFor(id, workflow) });
  });

  // A redelivered message: its executions exist already. Create an instance
  // only where the first delivery inserted the row but did not get that far.
  const notInserted = planned.filter((_, i) => !started[i]).map((p) => p.workflow);
  if (notInserted.length > 0) {
    const earlier = await db
      .select({ id: workflowExecutions.id, workflowId: workflowExecutions.workflowId, version: workflowExecutions.workflowVersion })
      .from(workflowExecutions)
      .where(
        and(
          inArray(
            workflowExecutions.workflowId,
            notInserted.map((w) => w.id),
          ),
          eq(workflowExecutions.triggerKey, key),
          inArray(workflowExecutions.status, ACTIVE_STATUSES),
        ),
      );
    for (const execution of earlier) {
      const exists = await env.AUTOMATIONS.get(execution.id).then(
        () => true,
        () => false,
      );
      const workflow = notInserted.find((w) => w.id === execution.workflowId)!;
      if (!exists) toCreate.push({ id: execution.id, params: paramsFor(execution.id, workflow, execution.version) });
    }
  }
  return toCreate;
}

/** Terminates instances of cancelled executions; one already finished or gone is fine. */
async function terminate(env: Env, executionIds: string[]) {
  await Promise.all(
    executionIds.map(async (id) => {
      try {
        await (await env.AUTOMATIONS.get(id)).terminate();
      } catch (err) {
        console.log("terminate", id, err instanceof Error ? err.message : err);
      }
    }),
  );
}

/**
 * The workflow queue's consumer: starts executions for triggers (instances
 * made with createBatch, up to 100 at a time), resumes waiting executions, and
 * terminates cancelled ones. A failed message is retried; redelivery is
 * harmless (unique trigger keys, instance lookups before creating).
 */
export async function consumeWorkflowMessages(messages: readonly QueuedMessage<WorkflowQueueMessage>[], env: Env): Promise<Verdict[]> {
  const db = getDb(env.DB);
  const verdicts: Verdict[] = messages.map(() => ACK);
  const pending: { index: number; attempts: number; instances: { id: string; params: ExecutionParams }[] }[] = [];
  for (const [index, message] of messages.entries()) {
    try {
      if (message.body.kind === "terminate") {
        await terminate(env, message.body.executionIds.slice(0, 100));
        continue;
      }
      await resumeWaiting(db, env, message.body);
      pending.push({ index, attempts: message.attempts, instances: await startExecutions(db, env, message.body) });
    } catch (err) {
      console.error("workflow trigger failed", err);
      verdicts[index] = retryAfter(5 * message.attempts);
    }
  }
  const all = pending.flatMap((p) => p.instances);
  let failure: string | null = null;
  for (const batch of chunks(all, WORKFLOW_CREATE_BATCH)) {
    try {
      await env.AUTOMATIONS.createBatch(batch);
    } catch (err) {
      console.error("creating workflow instances failed", err);
      failure = err instanceof Error ? err.message : String(err);
    }
  }
  for (const { index, attempts, instances } of pending) {
    if (failure === null || instances.length === 0) continue;
    // Retrying re-creates only instances that are missing (see startExecutions).
    if (attempts <= WORKFLOW_QUEUE_MAX_RETRIES) verdicts[index] = retryAfter(5 * attempts);
    else {
      // The queue drops the message after this delivery: nothing would ever start
      // these executions, so they end FAILED with the reason instead of RUNNING forever.
      await failUnstarted(
        db,
        env,
        instances.map((i) => i.id),
        `The workflow engine could not start this execution after ${attempts} attempts: ${failure}`,
      );
    }
  }
  return verdicts;
}

/** The workflow queue's max_retries (wrangler.toml): a message is delivered at most this many times plus one. */
export const WORKFLOW_QUEUE_MAX_RETRIES = 10;

/** Marks FAILED the executions (still RUNNING) whose instance does not exist; one that did get created is left alone. */
async function failUnstarted(db: Database, env: Env, executionIds: string[], reason: string) {
  const missing: string[] = [];
  for (const id of executionIds) {
    const exists = await env.AUTOMATIONS.get(id).then(
      () => true,
      () => false,
    );
    if (!exists) missing.push(id);
  }
  const now = new Date();
  for (const ids of chunks(missing, IN_LIST_IDS)) await failUnstartedExecutions(db.$client, ids, reason.slice(0, 1000), now);
}
