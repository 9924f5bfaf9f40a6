import { createScheduledController } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../../src/db/client";
import { workflowTriggerOutbox } from "../../../src/db/schema";
import type { Env } from "../../../src/env";
import worker from "../../../src/index";
import { WORKFLOW_QUEUE_NAME } from "../../../src/messages";
import { call } from "../../support/http";
import { heldQueue } from "../../support/queues";
import { automationProject } from "../../support/workflows";
import { eventually } from "../../support/wait";
import type { Contact, EmailList, UpsertedContact, Workflow } from "../../support/api";

vi.setConfig({ testTimeout: 60_000 });
afterEach(() => vi.restoreAllMocks());

describe("contact triggers", () => {
  it("CONTACT_CREATED starts for a contact created by POST /contacts and by /v1/track, not for an update", async () => {
    const a = await automationProject();
    const workflow = await a.createWorkflow({ name: "onboard", trigger: { type: "CONTACT_CREATED" }, steps: [] });
    const created = await a.project.api.post<UpsertedContact>("/contacts", { email: "new@example.org" });
    expect(created.status).toBe(201);
    await a.executionWhere(workflow.id, (e) => e.contactId === created.body.id && e.status === "COMPLETED");
    const { contact } = await a.track("tracked@example.org", "anything");
    await a.executionWhere(workflow.id, (e) => e.contactId === contact && e.status === "COMPLETED");
    // An update of an existing contact creates nothing: no trigger is recorded at all.
    await a.project.api.post("/contacts", { email: "new@example.org", data: { x: 1 } });
    const outbox = await getDb(env.DB).select().from(workflowTriggerOutbox).where(eq(workflowTriggerOutbox.projectId, a.project.id));
    expect(outbox).toHaveLength(0);
    expect(await a.executions(workflow.id)).toHaveLength(2);
  });

  it("CONTACT_SUBSCRIBED starts when a contact becomes subscribed (created subscribed, or switched on), not when unsubscribed", async () => {
    const a = await automationProject();
    const workflow = await a.createWorkflow({ name: "subscribed", trigger: { type: "CONTACT_SUBSCRIBED" }, allowReentry: true, steps: [] });
    const off = await a.project.api.post<UpsertedContact>("/contacts", { email: "quiet@example.org", subscribed: false });
    const on = await a.project.api.post<UpsertedContact>("/contacts", { email: "keen@example.org" });
    await a.executionWhere(workflow.id, (e) => e.contactId === on.body.id);
    expect((await a.executions(workflow.id)).map((e) => e.contactId)).toEqual([on.body.id]);
    const patched = await a.project.api.patch<Contact>(`/contacts/${off.body.id}`, { subscribed: true });
    expect(patched.status).toBe(200);
    await a.executionWhere(workflow.id, (e) => e.contactId === off.body.id && e.status === "COMPLETED");
    await a.project.api.patch(`/contacts/${off.body.id}`, { subscribed: false });
    await a.project.api.patch(`/contacts/${off.body.id}`, { subscribed: true });
    // Re-subscribing is a new subscription: a second execution (re-entry allowed).
    await eventually(async () => expect((await a.executions(workflow.id, `?contactId=${off.body.id}`)).length).toBe(2));
  });

  it("the cron hands over triggers recorded by paths without a key", async () => {
    const a = await automationProject();
    const workflow = await a.createWorkflow({ name: "cron", eventName: "offline", steps: [] });
    // An event written directly (as the unsubscribe page or a future path would) fills the outbox.
    const { contact } = await a.track("pat@example.org", "warmup");
    await getDb(env.DB).run(
      (await import("drizzle-orm"))
        .sql`INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES (${crypto.randomUUID()}, ${a.project.id}, ${contact}, 'offline', '{}', ${Date.now()})`,
    );
    expect(await getDb(env.DB).select().from(workflowTriggerOutbox).where(eq(workflowTriggerOutbox.projectId, a.project.id))).toHaveLength(1);
    await worker.scheduled!(createScheduledController({ scheduledTime: new Date(), cron: "* * * * *" }), env, {
      waitUntil() {},
      passThroughOnException() {},
    } as unknown as ExecutionContext);
    await a.executionWhere(workflow.id, (e) => e.contactId === contact && e.status === "COMPLETED");
  });
});

describe("steps on the contact", () => {
  it("UPDATE_CONTACT writes the contact; a MARKETING email to an unsubscribed contact is skipped and recorded", async () => {
    const a = await automationProject();
    const news = await a.template("News", { type: "MARKETING" });
    const workflow = await a.createWorkflow({
      name: "tidy",
      eventName: "churned",
      steps: [
        { id: "mark", type: "UPDATE_CONTACT", config: { data: { churned: true, plan: null }, subscribed: false }, next: "news" },
        { id: "news", type: "SEND_EMAIL", config: { templateId: news } },
      ],
    });
    const { contact } = await a.track("quinn@example.org", "churned", { plan: "pro", firstName: "Quinn" });
    const execution = await a.executionWhere(workflow.id, (e) => e.status === "COMPLETED");
    expect(execution.history.map((h) => [h.stepId, h.status, h.outcome])).toEqual([
      ["mark", "COMPLETED", "updated data churned, plan; subscribed=false"],
      // The unsubscribe put the address on the suppression list for broadcast mail: gate 1 refuses it (src/services/consent/gates.ts).
      ["news", "SKIPPED", "skipped: SUPPRESSED: the contact unsubscribed from broadcast mail (suppression list: UNSUBSCRIBE)"],
    ]);
    const after = await a.project.api.get<Contact>(`/contacts/${contact}`);
    expect(after.body).toMatchObject({ subscribed: false, data: { firstName: "Quinn", churned: true } });
    expect(after.body.data.plan).toBeUndefined();
    expect((await a.project.api.get<EmailList>("/emails")).body.data.total).toBe(0);
  });

  it("executions list: newest first, status and contactId filters, 404 for an unknown execution", async () => {
    const a = await automationProject();
    const workflow = await a.createWorkflow({
      name: "list",
      eventName: "go",
      steps: [{ id: "hold", type: "WAIT_FOR_EVENT", config: { eventName: "never", timeout: { amount: 1, unit: "days" } } }],
    });
    const done = await a.createWorkflow({ name: "list-done", eventName: "go", steps: [] });
    const first = await a.track("r1@example.org", "go");
    await a.executionWhere(workflow.id, (e) => e.contactId === first.contact);
    const second = await a.track("r2@example.org", "go");
    await a.executionWhere(workflow.id, (e) => e.contactId === second.contact);
    const all = await a.executions(workflow.id, "?limit=1");
    expect(all.map((e) => e.contactId)).toEqual([second.contact]);
    expect(await a.executions(workflow.id, "?status=COMPLETED")).toEqual([]);
    expect((await a.executions(workflow.id, "?status=WAITING")).length).toBe(2);
    expect((await a.executions(workflow.id, `?contactId=${first.contact}`)).map((e) => e.contactId)).toEqual([first.contact]);
    const bad = await a.project.api.get(`/workflows/${workflow.id}/executions?status=DONE`);
    expect(bad.status).toBe(422);
    const missing = await a.project.api.get(`/workflows/${workflow.id}/executions/nope`);
    expect(missing.status).toBe(404);
    // An execution of another workflow is not found under this one.
    const other = (await a.executions(done.id))[0];
    if (other) expect((await a.project.api.get(`/workflows/${workflow.id}/executions/${other.id}`)).status).toBe(404);
  });
});

describe("public-key events", () => {
  it("start or resume a workflow only when the workflow allows public events (allowPublicEvents, default false)", async () => {
    const a = await automationProject();
    const pk = (email: string, event: string) => a.project.publicApi.post("/v1/track", { email, event });
    const starts = await a.createWorkflow({ name: "dunning", trigger: { type: "EVENT", eventName: "payment-failed" }, steps: [] });
    const waits = await a.createWorkflow({
      name: "waits",
      trigger: { type: "EVENT", eventName: "begin" },
      steps: [{ id: "hold", type: "WAIT_FOR_EVENT", config: { eventName: "paid", timeout: { amount: 1, unit: "days" } } }],
    });
    expect((await a.project.api.get(`/workflows/${starts.id}`)).body).toMatchObject({ allowPublicEvents: false });
    const { contact } = await a.track("victim@example.org", "begin");
    await a.executionWhere(waits.id, (e) => e.contactId === contact && e.status === "WAITING");

    // A visitor's pk_ events, their triggers held and run through the real consumer: neither starts
    // "dunning" (no execution row) nor resumes the wait (no instance looked up to send it the event).
    const resumed: string[] = [];
    const automations = {
      get: (id: string) => {
        resumed.push(id);
        return env.AUTOMATIONS.get(id);
      },
      create: (...args: Parameters<Env["AUTOMATIONS"]["create"]>) => env.AUTOMATIONS.create(...args),
      createBatch: (...args: Parameters<Env["AUTOMATIONS"]["createBatch"]>) => env.AUTOMATIONS.createBatch(...args),
    };
    const held = heldQueue("WORKFLOW_QUEUE", WORKFLOW_QUEUE_NAME, { ...(env as Env), AUTOMATIONS: automations as unknown as Env["AUTOMATIONS"] });
    const heldPk = (email: string, event: string) => call("POST", "/v1/track", { key: a.project.publicKey, body: { email, event }, env: held.env });
    expect((await heldPk("victim@example.org", "payment-failed")).status).toBe(200);
    expect((await heldPk("victim@example.org", "paid")).status).toBe(200);
    expect(held.messages).toHaveLength(2);
    await held.drain();
    expect(resumed).toEqual([]);
    expect(await a.executions(starts.id)).toEqual([]);
    // A secret-key event does start it.
    const { contact: other } = await a.track("real@example.org", "payment-failed");
    await a.executionWhere(starts.id, (e) => e.contactId === other && e.status === "COMPLETED");
    expect((await a.executions(starts.id)).map((e) => e.contactId)).toEqual([other]);
    expect((await a.executions(waits.id))[0]).toMatchObject({ contactId: contact, status: "WAITING" });

    // Opted in: the same pk_ events start and resume.
    for (const id of [starts.id, waits.id]) {
      const res = await a.project.api.patch<Workflow>(`/workflows/${id}`, { allowPublicEvents: true });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.allowPublicEvents).toBe(true);
    }
    expect((await pk("victim@example.org", "payment-failed")).status).toBe(200);
    await a.executionWhere(starts.id, (e) => e.contactId === contact && e.status === "COMPLETED");
    expect((await pk("victim@example.org", "paid")).status).toBe(200);
    await a.executionWhere(waits.id, (e) => e.contactId === contact && e.status === "COMPLETED");
  });
});
