import { introspectWorkflow } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../../src/db/client";
import { workflowExecutions } from "../../../src/db/schema";
import { automationProject } from "../../support/workflows";
import { eventually } from "../../support/wait";
import type { Workflow } from "../../support/api";

vi.setConfig({ testTimeout: 60_000 });
afterEach(() => vi.restoreAllMocks());

const waitFor = (id: string, eventName: string, then?: string) => ({
  id,
  type: "WAIT_FOR_EVENT",
  config: { eventName, timeout: { amount: 1, unit: "days" } },
  branches: { event: then ?? null, timeout: null },
});

/**
 * A witness: a workflow with no steps, re-entry allowed, on the same trigger.
 * Its executions complete at once, and each trigger message decides for every
 * matching workflow in one batch, so once the witness has N executions the
 * workflow under test has seen N triggers too.
 */
async function witness(a: Awaited<ReturnType<typeof automationProject>>, eventName: string) {
  const w = await a.createWorkflow({ name: "witness", eventName, allowReentry: true });
  return {
    async seen(n: number) {
      await a.executionWhere(w.id, () => true).catch(() => undefined);
      await eventually(async () => {
        const items = await a.executions(w.id);
        expect(items.filter((e) => e.status === "COMPLETED")).toHaveLength(n);
      });
    },
  };
}

describe("re-entry", () => {
  it("allowReentry false: a contact with a finished execution never starts another", async () => {
    const a = await automationProject();
    const t = await a.template("Once");
    const workflow = await a.createWorkflow({ name: "once", eventName: "signup", steps: [{ id: "mail", type: "SEND_EMAIL", config: { templateId: t } }] });
    const seen = await witness(a, "signup");
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);

    await a.track("dana@example.org", "signup");
    await a.executionWhere(workflow.id, (e) => e.status === "COMPLETED");
    await seen.seen(1);
    await a.track("dana@example.org", "signup");
    await seen.seen(2);
    expect(await a.executions(workflow.id)).toHaveLength(1);
    // Another contact still enters.
    await a.track("erin@example.org", "signup");
    await seen.seen(3);
    expect(await a.executions(workflow.id)).toHaveLength(2);
    await eventually(async () => expect(await a.delivered()).toEqual(["dana@example.org: Once for friend", "erin@example.org: Once for friend"]));
    expect(introspector.get().length).toBeGreaterThanOrEqual(2);
  });

  it("allowReentry true: again after it finished, but never two running at a time", async () => {
    const a = await automationProject();
    const workflow = await a.createWorkflow({ name: "again", eventName: "visit", allowReentry: true, steps: [waitFor("hold", "leave")] });
    const seen = await witness(a, "visit");
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);

    await a.track("finn@example.org", "visit");
    const first = await a.executionWhere(workflow.id, (e) => e.status === "WAITING");
    await seen.seen(1);
    await a.track("finn@example.org", "visit"); // one is running: nothing new
    await seen.seen(2);
    expect(await a.executions(workflow.id)).toHaveLength(1);

    await a.track("finn@example.org", "leave");
    await a.executionWhere(workflow.id, (e) => e.id === first.id && e.status === "COMPLETED");
    await a.track("finn@example.org", "visit"); // finished: enters again
    await seen.seen(3);
    await a.executionWhere(workflow.id, (e) => e.id !== first.id && e.status === "WAITING");
    expect(await a.executions(workflow.id)).toHaveLength(2);
    expect(introspector.get().length).toBeGreaterThanOrEqual(2);
  });

  it("a disabled workflow starts nothing; enabling it starts later triggers", async () => {
    const a = await automationProject();
    const workflow = await a.createWorkflow({ name: "off", eventName: "ping", enabled: false, steps: [] });
    const seen = await witness(a, "ping");
    await a.track("gus@example.org", "ping");
    await seen.seen(1);
    expect(await a.executions(workflow.id)).toHaveLength(0);
    await a.project.api.patch(`/workflows/${workflow.id}`, { enabled: true });
    await a.track("gus@example.org", "ping");
    await a.executionWhere(workflow.id, (e) => e.status === "COMPLETED");
  });
});

describe("version pinning", () => {
  it("an edit makes a new version; the running execution finishes on the version it started with", async () => {
    const a = await automationProject();
    const oldMail = await a.template("Old");
    const newMail = await a.template("New");
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    const workflow = await a.createWorkflow({
      name: "pinned",
      eventName: "start",
      allowReentry: true,
      steps: [waitFor("hold", "go", "mail"), { id: "mail", type: "SEND_EMAIL", config: { templateId: oldMail } }],
    });
    await a.track("hal@example.org", "start");
    const running = await a.executionWhere(workflow.id, (e) => e.status === "WAITING");

    const edited = await a.project.api.patch<Workflow>(`/workflows/${workflow.id}`, {
      steps: [waitFor("hold", "go", "mail"), { id: "mail", type: "SEND_EMAIL", config: { templateId: newMail } }],
    });
    expect(edited.body.version).toBe(2);

    await a.track("ivy@example.org", "start");
    const later = await a.executionWhere(workflow.id, (e) => e.id !== running.id && e.status === "WAITING");
    expect([running.workflowVersion, later.workflowVersion]).toEqual([1, 2]);

    await a.track("hal@example.org", "go");
    await a.track("ivy@example.org", "go");
    await a.executionWhere(workflow.id, (e) => e.id === running.id && e.status === "COMPLETED");
    await a.executionWhere(workflow.id, (e) => e.id === later.id && e.status === "COMPLETED");
    await eventually(async () => expect(await a.delivered()).toEqual(["hal@example.org: Old for friend", "ivy@example.org: New for friend"]));
    expect(introspector.get()).toHaveLength(2);
  });
});

describe("cancellation", () => {
  it("deleting a workflow terminates its running instances and marks their executions CANCELLED", async () => {
    const a = await automationProject();
    const t = await a.template("Never");
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    const workflow = await a.createWorkflow({
      name: "doomed",
      eventName: "start",
      steps: [waitFor("hold", "go", "mail"), { id: "mail", type: "SEND_EMAIL", config: { templateId: t } }],
    });
    const finished = await a.createWorkflow({ name: "doomed-done", eventName: "start", steps: [] });
    await a.track("jo@example.org", "start");
    await a.track("kim@example.org", "start");
    await eventually(async () => expect((await a.executions(workflow.id)).map((e) => e.status)).toEqual(["WAITING", "WAITING"]));
    await eventually(async () => expect(introspector.get()).toHaveLength(4));

    expect((await a.project.api.delete(`/workflows/${workflow.id}`)).status).toBe(204);
    const rows = await getDb(env.DB)
      .select({ status: workflowExecutions.status, error: workflowExecutions.error, finishedAt: workflowExecutions.finishedAt })
      .from(workflowExecutions)
      .where(eq(workflowExecutions.workflowId, workflow.id));
    expect(rows.map((r) => [r.status, r.error])).toEqual([
      ["CANCELLED", "The workflow was deleted"],
      ["CANCELLED", "The workflow was deleted"],
    ]);
    expect(rows.every((r) => r.finishedAt !== null)).toBe(true);

    // Both waiting instances are terminated through the queue.
    const ids = await getDb(env.DB).select({ id: workflowExecutions.id }).from(workflowExecutions).where(eq(workflowExecutions.workflowId, workflow.id));
    for (const { id } of ids) {
      const handle = await env.AUTOMATIONS.get(id);
      await eventually(async () => expect((await handle.status()).status).toBe("terminated"));
    }
    // The event they waited for resumes nothing now (the witness proves the event was handled).
    const seen = await witness(a, "go");
    await a.track("jo@example.org", "go");
    await seen.seen(1);
    expect(await a.delivered()).toEqual([]);
    const still = await getDb(env.DB)
      .select({ status: workflowExecutions.status })
      .from(workflowExecutions)
      .where(eq(workflowExecutions.workflowId, workflow.id));
    expect(still.map((r) => r.status)).toEqual(["CANCELLED", "CANCELLED"]);
    expect((await a.project.api.get<Workflow>(`/workflows/${finished.id}`)).body.stats.completed).toBe(2);
  });
});
