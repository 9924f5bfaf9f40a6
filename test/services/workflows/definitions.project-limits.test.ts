import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../../src/db/client";
import { events, workflowExecutions, workflowTriggerOutbox } from "../../../src/db/schema";
import type { Env } from "../../../src/env";
import { buildCancelProjectExecutions, buildSetProjectDisabled } from "../../../src/services/projects";
import { MAX_WORKFLOWS_PER_PROJECT } from "../../../src/services/workflows/definitions";
import { executionMayContinue } from "../../../src/services/workflows/executions";
import { callWebhookStep } from "../../../src/services/workflows/steps";
import { dispatchWorkflowTriggers } from "../../../src/services/workflows/triggers";
import { WORKFLOW_QUEUE_NAME } from "../../../src/messages";
import { heldQueue } from "../../support/queues";
import { expectError, newProject } from "../../support/http";
import { automationProject } from "../../support/workflows";
import { eventually } from "../../support/wait";
import type { CreatedWorkflow } from "../../support/api";

vi.setConfig({ testTimeout: 60_000 });
afterEach(() => vi.restoreAllMocks());

const hold = [{ id: "hold", type: "WAIT_FOR_EVENT", config: { eventName: "never", timeout: { amount: 1, unit: "days" } } }];

async function executionRows(workflowId: string) {
  return getDb(env.DB).select().from(workflowExecutions).where(eq(workflowExecutions.workflowId, workflowId));
}

describe("workflows: per-project caps and disabled projects", () => {
  it(`a project may have ${MAX_WORKFLOWS_PER_PROJECT} workflows; the next is a 403 QUOTA_EXCEEDED until one is deleted`, async () => {
    const p = await newProject();
    const ids: string[] = [];
    for (let i = 0; i < MAX_WORKFLOWS_PER_PROJECT; i++) {
      const res = await p.api.post<CreatedWorkflow>("/workflows", { name: `w${i}`, eventName: `e${i}`, steps: [] });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      ids.push(res.body.id);
    }
    const refused = expectError(await p.api.post("/workflows", { name: "one more", eventName: "x", steps: [] }), 403, "QUOTA_EXCEEDED");
    expect(refused.message).toContain(String(MAX_WORKFLOWS_PER_PROJECT));
    expect((await p.api.delete(`/workflows/${ids[0]}`)).status).toBeLessThan(300);
    expect((await p.api.post("/workflows", { name: "one more", eventName: "x", steps: [] })).status).toBe(201);
    // Another project is not affected.
    expect((await (await newProject()).api.post("/workflows", { name: "w", eventName: "x", steps: [] })).status).toBe(201);
  });

  it("disabling a project (npm run project -- disable) cancels its running and waiting executions", async () => {
    const a = await automationProject();
    const workflow = await a.createWorkflow({ name: "hold", eventName: "start", steps: hold });
    await a.track("kim@example.org", "start");
    await a.executionWhere(workflow.id, (e) => e.status === "WAITING");
    const db = getDb(env.DB);
    // The statements the project script runs for `disable`.
    await db.batch([buildSetProjectDisabled(db, a.project.id, true), buildCancelProjectExecutions(db, a.project.id)]);
    const [row] = await executionRows(workflow.id);
    expect(row).toMatchObject({ status: "CANCELLED", error: "The project is disabled" });
    expect(row.finishedAt).toBeInstanceOf(Date);
  });

  it("an execution of a disabled project stops at its next step: the step's check cancels it", async () => {
    const a = await automationProject();
    const workflow = await a.createWorkflow({ name: "hold", eventName: "start", steps: hold });
    await a.track("kim@example.org", "start");
    const execution = await a.executionWhere(workflow.id, (e) => e.status === "WAITING");
    const db = getDb(env.DB);
    expect(await executionMayContinue(db, execution.id, a.project.id)).toBe(true);
    await db.batch([buildSetProjectDisabled(db, a.project.id, true)]); // disabled by hand, executions left as they were
    expect(await executionMayContinue(db, execution.id, a.project.id)).toBe(false);
    expect((await executionRows(workflow.id))[0]).toMatchObject({ status: "CANCELLED", error: "The project is disabled" });
  });

  it("a disabled project's triggers start no execution", async () => {
    const a = await automationProject();
    const workflow = await a.createWorkflow({ name: "hold", eventName: "start", steps: hold });
    const { contact } = await a.track("kim@example.org", "warm-up");
    const db = getDb(env.DB);
    // The warm-up's own trigger is handed over first, so the one below is this test's to hold.
    await eventually(async () => expect(await db.select().from(workflowTriggerOutbox).where(eq(workflowTriggerOutbox.projectId, a.project.id))).toEqual([]));
    await db.batch([buildSetProjectDisabled(db, a.project.id, true)]);
    // An event recorded as any write would (a D1 trigger fills the workflow outbox), then dispatched to the real consumer.
    await db.insert(events).values({ id: crypto.randomUUID(), projectId: a.project.id, contactId: contact, name: "start", data: {}, createdAt: new Date() });
    const held = heldQueue("WORKFLOW_QUEUE", WORKFLOW_QUEUE_NAME);
    await dispatchWorkflowTriggers(db, held.env, a.project.id);
    expect(held.messages.map((m) => m.body)).toEqual([expect.objectContaining({ eventName: "start" })]);
    await held.drain();
    expect(await executionRows(workflow.id)).toEqual([]);
  });

  it("WEBHOOK calls per project per minute go through the project's limiter: past the limit the step throws (retried later)", async () => {
    const calls: string[] = [];
    const a = await automationProject(async (request) => {
      calls.push(request.url);
      return new Response("ok");
    });
    a.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    const workflow = await a.createWorkflow({ name: "hold", eventName: "start", steps: hold });
    const { contact } = await a.track("kim@example.org", "start");
    const execution = await a.executionWhere(workflow.id, (e) => e.status === "WAITING");
    const limited = { ...env, WORKFLOW_WEBHOOKS_PER_MINUTE: "2" } as Env;
    const input = (stepId: string) => ({
      projectId: a.project.id,
      workflowId: workflow.id,
      executionId: execution.id,
      stepId,
      contactId: contact,
      config: { url: "https://hooks.example.net/in" },
    });
    const db = getDb(env.DB);
    // The minute's window is the limiter's; start just after a boundary so two calls share one.
    await eventually(async () => expect(Date.now() % 60_000).toBeLessThan(50_000), 15_000);
    expect(await callWebhookStep(db, limited, input("a"))).toBe("HTTP 200");
    expect(await callWebhookStep(db, limited, input("b"))).toBe("HTTP 200");
    await expect(callWebhookStep(db, limited, input("c"))).rejects.toThrow(/2 webhook calls a minute/);
    expect(calls).toEqual(["https://hooks.example.net/in", "https://hooks.example.net/in"]);
  });
});
