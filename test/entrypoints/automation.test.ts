import { introspectWorkflow } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";

vi.setConfig({ testTimeout: 60_000 });
import type { WorkflowQueueMessage } from "../../src/services/workflows/executions";
import { automationProject } from "../support/workflows";
import { eventually } from "../support/wait";
import { WORKFLOW_QUEUE_NAME } from "../../src/messages";
import { runConsumer } from "../support/queues";
import type { EmailList, Execution, Workflow } from "../support/api";

afterEach(() => vi.restoreAllMocks());

/**
 * track `signup` -> email A -> delay 2 days -> wait for `activated` (3 days)
 *   event   -> CONDITION data.plan = "pro" -> yes: email B / no: EXIT
 *   timeout -> EXIT
 */
async function welcomeSeries() {
  const a = await automationProject();
  const emailA = await a.template("Welcome");
  const emailB = await a.template("Pro tips");
  const workflow = await a.createWorkflow({
    name: "Welcome series",
    trigger: { type: "EVENT", eventName: "signup" },
    steps: [
      { id: "welcome", type: "SEND_EMAIL", config: { templateId: emailA }, next: "pause" },
      { id: "pause", type: "DELAY", config: { amount: 2, unit: "days" }, next: "activation" },
      {
        id: "activation",
        type: "WAIT_FOR_EVENT",
        config: { eventName: "activated", timeout: { amount: 3, unit: "days" } },
        branches: { event: "is-pro", timeout: "give-up" },
      },
      {
        id: "is-pro",
        type: "CONDITION",
        config: { condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] } },
        branches: { yes: "tips", no: "not-pro" },
      },
      { id: "tips", type: "SEND_EMAIL", config: { templateId: emailB } },
      { id: "not-pro", type: "EXIT", config: {} },
      { id: "give-up", type: "EXIT", config: {} },
    ],
  });
  return { ...a, workflow };
}

describe("welcome series on Cloudflare Workflows", () => {
  it("event branch, pro contact: email A, the 2-day delay, /v1/track resumes the wait, CONDITION yes, email B; COMPLETED", async () => {
    const s = await welcomeSeries();
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    await introspector.modifyAll(async (m) => {
      await m.disableSleeps();
    });

    const { contact } = await s.track("ada@example.org", "signup", { firstName: "Ada", plan: "pro" });

    // The execution reaches the wait: email A queued, the delay done, waiting for `activated`.
    const waiting = await s.executionWhere(s.workflow.id, (e) => e.status === "WAITING" && e.currentStepId === "activation");
    expect(waiting).toMatchObject({ workflowId: s.workflow.id, workflowVersion: 1, contactId: contact, finishedAt: null });
    expect(Date.parse(waiting.resumeAt!) - Date.now()).toBeGreaterThan(3 * 86_400_000 - 60_000);
    expect(waiting.history.map((h) => [h.stepId, h.status])).toEqual([
      ["welcome", "COMPLETED"],
      ["pause", "COMPLETED"],
      ["activation", "WAITING"],
    ]);
    expect(waiting.history[1].outcome).toBe("waited 2 days");
    const instances = introspector.get();
    expect(instances).toHaveLength(1);

    // Another event of the contact does not resume it; `activated` does.
    await s.track("ada@example.org", "clicked-around");
    await s.track("ada@example.org", "activated");
    await instances[0].waitForStatus("complete");

    const done = await s.project.api.get<Execution>(`/workflows/${s.workflow.id}/executions/${waiting.id}`);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ id: waiting.id, status: "COMPLETED", currentStepId: null, error: null });
    expect(done.body.finishedAt).not.toBeNull();
    expect(done.body.history.map((h) => [h.stepId, h.type, h.status, h.outcome?.replace(/email \S+ queued/, "queued")])).toEqual([
      ["welcome", "SEND_EMAIL", "COMPLETED", "queued"],
      ["pause", "DELAY", "COMPLETED", "waited 2 days"],
      ["activation", "WAIT_FOR_EVENT", "COMPLETED", "event activated received"],
      ["is-pro", "CONDITION", "COMPLETED", "yes"],
      ["tips", "SEND_EMAIL", "COMPLETED", "queued"],
    ]);

    // Both emails are ordinary email records that went through the send pipeline to the provider.
    await eventually(async () => expect(await s.delivered()).toEqual(["ada@example.org: Pro tips for Ada", "ada@example.org: Welcome for Ada"]));
    const emails = await s.project.api.get<EmailList>("/emails?limit=10");
    expect(emails.body.data.items.map((e) => e.status)).toEqual(["SENT", "SENT"]);

    const stats = await s.project.api.get<Workflow>(`/workflows/${s.workflow.id}`);
    expect(stats.body.stats).toEqual({ running: 0, waiting: 0, completed: 1, exited: 0, failed: 0, cancelled: 0 });
  });

  it("event branch, contact not on pro: CONDITION no, EXIT; only email A", async () => {
    const s = await welcomeSeries();
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    await introspector.modifyAll(async (m) => {
      await m.disableSleeps();
    });
    await s.track("bob@example.org", "signup", { firstName: "Bob", plan: "free" });
    await s.executionWhere(s.workflow.id, (e) => e.status === "WAITING" && e.currentStepId === "activation");
    // The condition reads the contact as it is when the step runs, not at signup.
    await s.track("bob@example.org", "activated", { plan: "starter" });
    await introspector.get()[0].waitForStatus("complete");

    const [execution] = await s.executions(s.workflow.id);
    expect(execution.status).toBe("EXITED");
    expect(execution.history.map((h) => [h.stepId, h.outcome?.replace(/email \S+ queued/, "queued")])).toEqual([
      ["welcome", "queued"],
      ["pause", "waited 2 days"],
      ["activation", "event activated received"],
      ["is-pro", "no"],
      ["not-pro", "exited"],
    ]);
    await eventually(async () => expect(await s.delivered()).toEqual(["bob@example.org: Welcome for Bob"]));
    expect((await s.project.api.get<Workflow>(`/workflows/${s.workflow.id}`)).body.stats).toMatchObject({ exited: 1, completed: 0 });
  });

  it("timeout branch: no `activated` within 3 days, EXIT; a redelivered trigger message starts nothing twice", async () => {
    const s = await welcomeSeries();
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    await introspector.modifyAll(async (m) => {
      await m.disableSleeps();
      await m.forceEventTimeout({ name: "activation:wait" });
    });
    const tracked = await s.track("cy@example.org", "signup", { firstName: "Cy", plan: "pro" });
    await eventually(async () => expect(introspector.get()).toHaveLength(1));
    await introspector.get()[0].waitForStatus("complete");

    const [execution] = await s.executions(s.workflow.id);
    expect(execution.status).toBe("EXITED");
    expect(execution.history.map((h) => [h.stepId, h.outcome?.replace(/email \S+ queued/, "queued")])).toEqual([
      ["welcome", "queued"],
      ["pause", "waited 2 days"],
      ["activation", "timed out"],
      ["give-up", "exited"],
    ]);

    // The same trigger delivered again (at-least-once queue): nothing new starts.
    const message: WorkflowQueueMessage = {
      kind: "trigger",
      outboxId: 1,
      projectId: s.project.id,
      contactId: tracked.contact,
      type: "EVENT",
      eventName: "signup",
      eventId: tracked.event,
    };
    for (let attempt = 1; attempt <= 2; attempt++) {
      const result = await runConsumer(WORKFLOW_QUEUE_NAME, env, [{ id: `redelivery-${attempt}`, attempts: attempt, body: message }]);
      expect(result.explicitAcks).toEqual([`redelivery-${attempt}`]);
    }
    expect(await s.executions(s.workflow.id)).toHaveLength(1);
    expect(introspector.get()).toHaveLength(1);
    await eventually(async () => expect(await s.delivered()).toEqual(["cy@example.org: Welcome for Cy"]));
    expect((await s.project.api.get<EmailList>("/emails")).body.data.total).toBe(1);
  });
});
