import { introspectWorkflowInstance } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { MoveResult } from "../../src/entrypoints/project-move";
import { countBoth } from "../../src/services/shards/move";
import { MOVE_TABLES } from "../../src/store/project-move";
import type { Email, SendResponse, UpsertedContact, Webhook } from "../support/api";
import { eventually } from "../support/wait";
import { type AutomationProject, automationProject } from "../support/workflows";

/** The D1 of shard `n` in the tests (0: DB, the control database too; 1: SHARD_1). */
export const shard = (n: number): D1Database => (n === 0 ? env.DB : env.SHARD_1!);

/** Each moved table's rows of the project on one shard, by table name (tables without any left out). */
export async function rowsOn(n: number, projectId: string): Promise<Record<string, number>> {
  const counts = await countBoth(shard(n), shard(n), projectId);
  return Object.fromEntries(counts.filter((c) => c.source > 0).map((c) => [c.table, c.source]));
}

/** Runs a move to shard `to` through the Worker's ProjectMoveWorkflow (what `npm run project -- move` starts), its waits skipped. */
export async function move(projectId: string, to: number): Promise<{ status: string; output: MoveResult | undefined; error?: string }> {
  const id = `move-${projectId}-${to}-${crypto.randomUUID().slice(0, 8)}`;
  await using instance = await introspectWorkflowInstance(env.PROJECT_MOVES, id);
  await instance.modify(async (m) => {
    await m.disableSleeps();
  });
  const created = await env.PROJECT_MOVES.create({ id, params: { projectId, to } });
  await eventually(async () => expect(["complete", "errored", "terminated"]).toContain((await created.status()).status), 30_000);
  const status = await created.status();
  return { status: status.status, output: status.output as MoveResult | undefined, error: status.error?.message };
}

/** Every table a project has rows in after `populate` (what a move must carry). */
export const POPULATED = [
  "projects",
  "contacts",
  "templates",
  "segments",
  "send_headers",
  "emails",
  "events",
  "webhook_endpoints",
  "webhook_events",
  "webhook_deliveries",
  "workflows",
  "workflow_versions",
  "workflow_executions",
  "project_usage",
  "project_daily_usage",
  "project_reputation",
];

/**
 * A project with some of everything, made through the HTTP API and the real queues: contacts,
 * a template, a segment, a webhook endpoint and its deliveries, a workflow and its
 * executions, events, and sent emails (custom headers kept per send).
 */
export async function populatedProject(): Promise<AutomationProject & { emails: string[]; contacts: string[]; webhook: Webhook }> {
  const a = await automationProject(async () => new Response("ok"));
  a.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
  const { project } = a;
  const hook = await project.api.post<Webhook>("/webhooks", { url: "https://hooks.example.net/in", events: [] });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  const template = await a.template("Welcome");
  await a.createWorkflow({ name: "welcome", eventName: "signup", steps: [{ id: "mail", type: "SEND_EMAIL", config: { templateId: template } }] });
  const segment = await project.api.post("/segments", {
    name: "Pro",
    condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] },
  });
  expect(segment.status, JSON.stringify(segment.body)).toBe(201);
  const contacts: string[] = [];
  for (const email of ["ann@example.org", "bob@example.org", "cid@example.org"]) {
    const res = await project.api.post<UpsertedContact>("/contacts", { email, data: { plan: "pro" } });
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
    contacts.push(res.body.id);
  }
  await a.track("ann@example.org", "signup");
  const sent = await project.api.post<SendResponse>("/v1/send", {
    to: ["bob@example.org", "cid@example.org"],
    from: a.from,
    subject: "Hello",
    body: "<p>Hi</p>",
    headers: { "X-Campaign": "move" },
  });
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  const emails = sent.body.data.emails.map((e) => e.email);
  // Sent by the real consumer, the workflow's email too; the webhook deliveries made.
  await eventually(async () => {
    for (const id of emails) expect((await project.api.get<Email>(`/emails/${id}`)).body.status).toBe("SENT");
    expect(await a.delivered()).toHaveLength(3);
  });
  return { ...a, emails, contacts, webhook: hook.body };
}

/** The names of every moved table (for messages). */
export const MOVED = MOVE_TABLES.map((t) => t.name);
