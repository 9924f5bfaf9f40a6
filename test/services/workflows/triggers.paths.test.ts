import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../../src/db/client";
import { contacts } from "../../../src/db/schema";
import type { Env } from "../../../src/env";
import { newId } from "../../../src/lib/ids";
import type { WorkflowQueueMessage } from "../../../src/services/workflows/executions";
import { WORKFLOW_QUEUE_MAX_RETRIES } from "../../../src/services/workflows/triggers";
import { newProject } from "../../support/http";
import { automationProject } from "../../support/workflows";
import wranglerToml from "../../../wrangler.toml?raw";
import { WORKFLOW_QUEUE_NAME } from "../../../src/messages";
import { runConsumer } from "../../support/queues";
import type { CreatedWorkflow, ExecutionList, SendResponse, UpsertedContact, Workflow } from "../../support/api";

vi.setConfig({ testTimeout: 60_000 });
afterEach(() => vi.restoreAllMocks());

/** The workflow queue's message for a "signup" event of this contact (as the outbox hands it over). */
const signupTrigger = (projectId: string, contactId: string): WorkflowQueueMessage => ({
  kind: "trigger",
  outboxId: 1,
  projectId,
  contactId,
  type: "EVENT",
  eventName: "signup",
  eventId: newId(),
});
describe("contact triggers from /v1/send", () => {
  it("a contact created by /v1/send starts the matching CONTACT_CREATED workflow; a send to an existing contact starts nothing", async () => {
    const a = await automationProject();
    const workflow = await a.createWorkflow({ name: "onboard", trigger: { type: "CONTACT_CREATED" }, steps: [] });
    const existing = await a.project.api.post<UpsertedContact>("/contacts", { email: "known@example.org" });
    expect(existing.status).toBe(201);
    await a.executionWhere(workflow.id, (e) => e.contactId === existing.body.id && e.status === "COMPLETED");

    const sent = await a.project.api.post<SendResponse>("/v1/send", {
      to: ["fresh@example.org", "known@example.org"],
      from: a.from,
      subject: "Hi",
      body: "<p>Hi</p>",
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const fresh = sent.body.data.emails.find((e) => e.contact.email === "fresh@example.org")!.contact.id;
    await a.executionWhere(workflow.id, (e) => e.contactId === fresh && e.status === "COMPLETED");
    expect((await a.executions(workflow.id)).map((e) => e.contactId).sort()).toEqual([existing.body.id, fresh].sort());
  });
});

describe("an execution whose Workflows instance cannot be created", () => {
  it("the consumer knows the workflow queue's last delivery: WORKFLOW_QUEUE_MAX_RETRIES is its max_retries in wrangler.toml", () => {
    const tables = wranglerToml.split(/^(?=\[)/m);
    const consumer = tables.find((table) => table.startsWith("[[queues.consumers]]") && /^queue = "edge-mail-workflows"\s*$/m.test(table));
    expect(Number(/^max_retries = (\d+)/m.exec(consumer ?? "")?.[1])).toBe(WORKFLOW_QUEUE_MAX_RETRIES);
  });

  it("is retried while the queue retries the trigger, then FAILED with the reason after its last delivery", async () => {
    const project = await newProject("engine down");
    const workflow = await project.api.post<CreatedWorkflow>("/workflows", {
      name: "down",
      enabled: true,
      trigger: { type: "EVENT", eventName: "signup" },
      steps: [],
    });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    const contactId = newId();
    await getDb(env.DB).insert(contacts).values({ id: contactId, projectId: project.id, email: "stuck@example.org", subscribed: true, data: {} });

    // The engine binding refuses every creation (an outage); no instance exists.
    const created: string[] = [];
    const engineDown = {
      ...env,
      AUTOMATIONS: {
        async createBatch(batch: { id: string }[]) {
          created.push(...batch.map((b) => b.id));
          throw new Error("workflow engine unavailable (test)");
        },
        async create() {
          throw new Error("workflow engine unavailable (test)");
        },
        async get(id: string) {
          throw new Error(`instance ${id} not found`);
        },
      },
    } as unknown as Env;
    const trigger = signupTrigger(project.id, contactId);
    const deliver = (attempts: number) => runConsumer(WORKFLOW_QUEUE_NAME, engineDown, [{ id: `m-${attempts}`, attempts, body: trigger }]);
    const executions = async () => (await project.api.get<ExecutionList>(`/workflows/${workflow.body.id}/executions`)).body.data.items;

    // Every delivery but the last: retried, the execution waits RUNNING for its instance.
    for (const attempts of [1, WORKFLOW_QUEUE_MAX_RETRIES]) {
      const result = await deliver(attempts);
      expect(result.retryMessages).toHaveLength(1);
      const [execution] = await executions();
      expect(execution).toMatchObject({ status: "RUNNING", contactId });
    }
    // The last delivery (the queue drops the message after it): FAILED, with why.
    const last = await deliver(WORKFLOW_QUEUE_MAX_RETRIES + 1);
    expect(last.retryMessages).toHaveLength(0);
    expect(last.explicitAcks).toHaveLength(1);
    const list = await executions();
    expect(list).toHaveLength(1);
    expect(list[0].status).toBe("FAILED");
    expect(list[0].error).toMatch(/could not start this execution after 11 attempts: workflow engine unavailable/);
    expect(list[0].finishedAt).not.toBeNull();
    expect(new Set(created)).toEqual(new Set([list[0].id]));
    expect((await project.api.get<Workflow>(`/workflows/${workflow.body.id}`)).body.stats).toMatchObject({ running: 0, failed: 1 });
  });

  it("an instance that did get created (the error came after) is left alone", async () => {
    const project = await newProject("engine flaky");
    const workflow = await project.api.post<CreatedWorkflow>("/workflows", {
      name: "flaky",
      enabled: true,
      trigger: { type: "EVENT", eventName: "signup" },
      steps: [],
    });
    const contactId = newId();
    await getDb(env.DB).insert(contacts).values({ id: contactId, projectId: project.id, email: "maybe@example.org", subscribed: true, data: {} });
    const flaky = {
      ...env,
      AUTOMATIONS: {
        async createBatch() {
          throw new Error("timed out (test)");
        },
        async get(id: string) {
          return { id };
        },
      },
    } as unknown as Env;
    const trigger = signupTrigger(project.id, contactId);
    await runConsumer(WORKFLOW_QUEUE_NAME, flaky, [{ id: "m-1", attempts: WORKFLOW_QUEUE_MAX_RETRIES + 1, body: trigger }]);
    const [execution] = (await project.api.get<ExecutionList>(`/workflows/${workflow.body.id}/executions`)).body.data.items;
    expect(execution.status).toBe("RUNNING");
  });
});
