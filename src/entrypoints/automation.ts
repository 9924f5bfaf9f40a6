import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep as EngineStep } from "cloudflare:workers";
import { NonRetryableError } from "cloudflare:workflows";
import { and, eq } from "drizzle-orm";
import { getDb } from "../db/client";
import { workflowVersions, type WorkflowExecutionStatus, type WorkflowHistoryEntry } from "../db/schema";
import type { Env } from "../env";
import { HandOver } from "../hand-over";
import type { AfterCommit } from "../lib/after-commit";
import { executionMayContinue, PROJECT_DISABLED_ERROR, recordProgress, type ExecutionParams } from "../services/workflows/executions";
import { MAX_STEPS, durationMs, type WorkflowStep } from "../schemas/workflows";
import { PermanentStepError, sendWorkflowEmail } from "../services/workflows/send-email";
import { callWebhookStep, evaluateConditionStep, updateContactStep } from "../services/workflows/steps";
import { waitEventType } from "../services/workflows/triggers";

/** Steps that only touch D1 (and the send queue): a few quick retries. */
const DB_STEP = { retries: { limit: 3, delay: "2 seconds", backoff: "exponential" }, timeout: "1 minute" } as const;
/** WEBHOOK: the receiver may be down for a while; after the last retry the execution is FAILED. */
export const WEBHOOK_RETRIES = 4;
const WEBHOOK_STEP = { retries: { limit: WEBHOOK_RETRIES, delay: "30 seconds", backoff: "exponential" }, timeout: "1 minute" } as const;

interface StepRecord {
  entry: WorkflowHistoryEntry;
  next: string | null;
  /** The execution was cancelled (its workflow deleted): stop here. */
  stopped: boolean;
}

const iso = () => new Date().toISOString();
const errorMessage = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 1000);

/** A step's error as the engine should see it: permanent ones are not retried. */
function asEngineError(err: unknown): unknown {
  if (err instanceof PermanentStepError) return new NonRetryableError(err.message);
  return err;
}

/**
 * One execution of a workflow: a Cloudflare Workflows instance whose id is the
 * execution id. It runs the definition version it was started with (loaded once
 * in a durable step) and writes its status, current step and history to D1
 * from inside its steps, so the API never asks the engine. Every step is a
 * durable step: a deploy or a crash resumes after the last finished one.
 */
export class AutomationWorkflow extends WorkflowEntrypoint<Env, ExecutionParams> {
  async run(event: Readonly<WorkflowEvent<ExecutionParams>>, step: EngineStep): Promise<{ status: WorkflowExecutionStatus }> {
    const params = event.payload;
    // Kept by the engine as JSON text: a replay after a deploy sees exactly the version it started with.
    const definition = await step.do("load definition", DB_STEP, async () => {
      const row = await this.db.query.workflowVersions.findFirst({
        where: and(eq(workflowVersions.workflowId, params.workflowId), eq(workflowVersions.version, params.version)),
      });
      return JSON.stringify(row?.steps ?? []);
    });
    const steps = JSON.parse(definition) as WorkflowStep[];
    const byId = new Map(steps.map((s) => [s.id, s]));
    const history: WorkflowHistoryEntry[] = [];
    const record = (
      status: WorkflowExecutionStatus,
      currentStepId: string | null,
      entries: WorkflowHistoryEntry[],
      extra: { waitingEvent?: string; waitingEmailId?: string; resumeAt?: Date; error?: string } = {},
    ) => this.handingOver((afterCommit) => recordProgress(this.db, params.executionId, { status, currentStepId, history: entries, ...extra }, afterCommit));

    let current: WorkflowStep | undefined = steps[0];
    if (!current) {
      await step.do("complete", DB_STEP, () => record("COMPLETED", null, []));
      return { status: "COMPLETED" };
    }
    // The graph is acyclic (checked when written), so no step runs twice; the bound is a guard.
    for (let walked = 0; current && walked < MAX_STEPS; walked++) {
      const s: WorkflowStep = current;
      let result: StepRecord;
      try {
        result = await this.runStep(step, params, s, history, record);
      } catch (err) {
        const message = errorMessage(err);
        await step.do(`${s.id}:failed`, DB_STEP, async () => {
          const entry: WorkflowHistoryEntry = { stepId: s.id, type: s.type, status: "FAILED", outcome: message, startedAt: iso(), finishedAt: iso() };
          await record("FAILED", s.id, [...history, entry], { error: message });
        });
        throw err;
      }
      history.push(result.entry);
      if (result.stopped) return { status: "CANCELLED" };
      if (s.type === "EXIT") return { status: "EXITED" };
      current = result.next ? byId.get(result.next) : undefined;
    }
    return { status: "COMPLETED" };
  }

  /** The execution's data shard as it is now: its env may follow the project to another shard between steps (entrypoints/follow-shard.ts). */
  private get db() {
    return getDb(this.env.DB);
  }

  /**
   * Runs a write of a step with the step's own door out (src/hand-over.ts): a
   * durable step is an invocation of its own, so what the write committed
   * (its webhook events) is handed over before the step ends, even when it throws.
   */
  private async handingOver<T>(write: (afterCommit: AfterCommit) => Promise<T>): Promise<T> {
    const door = new HandOver(this.env);
    try {
      return await write(door);
    } finally {
      await door.flush();
    }
  }

  /** Runs one step and records it; the status written is where the execution stands afterwards. */
  private async runStep(
    step: EngineStep,
    params: ExecutionParams,
    s: WorkflowStep,
    history: WorkflowHistoryEntry[],
    record: (
      status: WorkflowExecutionStatus,
      currentStepId: string | null,
      entries: WorkflowHistoryEntry[],
      extra?: { waitingEvent?: string; waitingEmailId?: string; resumeAt?: Date; error?: string },
    ) => Promise<boolean>,
  ): Promise<StepRecord> {
    /** Records a finished step and moves on to `next` (none: COMPLETED; EXIT: EXITED). */
    const finish = async (entry: WorkflowHistoryEntry, next: string | null): Promise<StepRecord> => {
      const status: WorkflowExecutionStatus = s.type === "EXIT" ? "EXITED" : next ? "RUNNING" : "COMPLETED";
      const ok = await record(status, next, [...history, entry]);
      return { entry, next, stopped: !ok };
    };
    const entry = (status: WorkflowHistoryEntry["status"], outcome: string | null, startedAt: string): WorkflowHistoryEntry => ({
      stepId: s.id,
      type: s.type,
      status,
      outcome,
      startedAt,
      finishedAt: iso(),
    });
    // Every step that does work first checks that the execution is still active and its project
    // not disabled (a disabled project's execution is CANCELLED there and stops).
    const guard = async (fn: () => Promise<StepRecord>): Promise<StepRecord> => {
      try {
        if (!(await executionMayContinue(this.db, params.executionId, params.projectId))) {
          return { entry: entry("FAILED", `cancelled: ${PROJECT_DISABLED_ERROR.toLowerCase()} or the execution ended`, iso()), next: null, stopped: true };
        }
        return await fn();
      } catch (err) {
        throw asEngineError(err);
      }
    };

    switch (s.type) {
      case "SEND_EMAIL":
        return step.do(s.id, DB_STEP, () =>
          guard(async () => {
            const startedAt = iso();
            const sent = await sendWorkflowEmail(this.db, this.env, {
              projectId: params.projectId,
              executionId: params.executionId,
              stepId: s.id,
              contactId: params.contactId,
              templateId: s.config.templateId,
              topic: s.config.topic,
            });
            if (sent.outcome === "cancelled") return { entry: entry("FAILED", "cancelled", startedAt), next: null, stopped: true };
            const e =
              sent.outcome === "queued"
                ? entry("COMPLETED", `email ${sent.emailId} queued`, startedAt)
                : entry("SKIPPED", `skipped: ${sent.reason}`, startedAt);
            return finish(e, s.next ?? null);
          }),
        );
      case "UPDATE_CONTACT":
        return step.do(s.id, DB_STEP, () =>
          guard(async () => {
            const startedAt = iso();
            const outcome = await this.handingOver((afterCommit) => updateContactStep(this.db, params.projectId, params.contactId, s.config, afterCommit));
            return finish(entry("COMPLETED", outcome, startedAt), s.next ?? null);
          }),
        );
      case "CONDITION":
        return step.do(s.id, DB_STEP, () =>
          guard(async () => {
            const startedAt = iso();
            const matched = await evaluateConditionStep(this.db, params.projectId, params.contactId, s.config.condition);
            return finish(entry("COMPLETED", matched ? "yes" : "no", startedAt), (matched ? s.branches?.yes : s.branches?.no) ?? null);
          }),
        );
      case "WEBHOOK":
        return step.do(s.id, WEBHOOK_STEP, () =>
          guard(async () => {
            const startedAt = iso();
            const outcome = await callWebhookStep(this.db, this.env, {
              projectId: params.projectId,
              workflowId: params.workflowId,
              executionId: params.executionId,
              stepId: s.id,
              contactId: params.contactId,
              config: s.config,
            });
            return finish(entry("COMPLETED", outcome, startedAt), s.next ?? null);
          }),
        );
      case "EXIT":
        return step.do(s.id, DB_STEP, async () => finish(entry("COMPLETED", "exited", iso()), null));
      case "DELAY": {
        const ms = durationMs(s.config);
        const started = await step.do(`${s.id}:start`, DB_STEP, async () => {
          const e: WorkflowHistoryEntry = { stepId: s.id, type: s.type, status: "WAITING", outcome: null, startedAt: iso(), finishedAt: null };
          const ok = await record("WAITING", s.id, [...history, e], { resumeAt: new Date(Date.now() + ms) });
          return { entry: e, next: null, stopped: !ok };
        });
        if (started.stopped) return started;
        await step.sleep(`${s.id}:sleep`, ms);
        return step.do(`${s.id}:done`, DB_STEP, () =>
          finish(
            {
              ...started.entry,
              status: "COMPLETED",
              outcome: `waited ${s.config.amount} ${s.config.amount === 1 ? s.config.unit.replace(/s$/, "") : s.config.unit}`,
              finishedAt: iso(),
            },
            s.next ?? null,
          ),
        );
      }
      case "WAIT_FOR_EVENT": {
        const ms = durationMs(s.config.timeout);
        const started = await step.do(`${s.id}:start`, DB_STEP, async () => {
          const e: WorkflowHistoryEntry = { stepId: s.id, type: s.type, status: "WAITING", outcome: null, startedAt: iso(), finishedAt: null };
          // Waiting for a reply to one email: the one the named SEND_EMAIL step sent (none sent: no reply can end the wait).
          const waitingEmailId = s.config.replyTo ? (emailSentBy(history, s.config.replyTo) ?? NO_EMAIL) : undefined;
          const ok = await record("WAITING", s.id, [...history, e], { waitingEvent: s.config.eventName, waitingEmailId, resumeAt: new Date(Date.now() + ms) });
          return { entry: e, next: null, stopped: !ok };
        });
        if (started.stopped) return started;
        let arrived: boolean;
        try {
          await step.waitForEvent(`${s.id}:wait`, { type: waitEventType(s.id), timeout: ms });
          arrived = true;
        } catch {
          // The engine rejects a wait that timed out.
          arrived = false;
        }
        return step.do(`${s.id}:done`, DB_STEP, () =>
          finish(
            { ...started.entry, status: "COMPLETED", outcome: arrived ? `event ${s.config.eventName} received` : "timed out", finishedAt: iso() },
            (arrived ? s.branches?.event : s.branches?.timeout) ?? null,
          ),
        );
      }
    }
  }
}

/** What a wait for a reply waits for when its SEND_EMAIL step sent nothing (skipped): no email id is this. */
const NO_EMAIL = "none";

/** The email a SEND_EMAIL step of this execution queued (its outcome "email <id> queued"), if it did. */
function emailSentBy(history: readonly WorkflowHistoryEntry[], stepId: string): string | undefined {
  const outcome = history.find((h) => h.stepId === stepId && h.type === "SEND_EMAIL")?.outcome;
  return outcome ? /^email (\S+) queued$/.exec(outcome)?.[1] : undefined;
}
