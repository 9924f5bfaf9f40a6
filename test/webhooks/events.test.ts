import { introspectWorkflow } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { verifiedDomain } from "../sending";
import { automationProject } from "../workflows/harness";
import { eventually, receiver, webhookProject } from "./harness";

afterEach(() => vi.restoreAllMocks());

const URL_ = "https://hooks.example.net/in";

/** The events an endpoint received, verified with its secret, in order. */
const received = (calls: { url: string; body: string; headers: Record<string, string> }[], secret: string, url = URL_) =>
  calls.filter((c) => c.url === url).map((c) => new Webhook(secret).verify(c.body, c.headers) as { type: string; timestamp: string; data: any });

describe("events recorded where the state changes, delivered through the real queue", () => {
  it("domain.verified when a check verifies a domain", async () => {
    const { calls, dns } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_, events: ["domain.verified", "domain.failed"] });
    const name = await verifiedDomain(p, dns);
    const [event] = await eventually(async () => {
      const events = received(calls, hook.secret);
      expect(events).toHaveLength(1);
      return events;
    });
    expect(event).toMatchObject({ type: "domain.verified", data: { domain: name, status: "VERIFIED", verifiedAt: expect.any(String) } });
    // Checking again changes nothing: no second event.
    const list = await p.api.get("/domains");
    await p.api.post(`/domains/${list.body.data.items[0].id}/verify`);
    await new Promise((r) => setTimeout(r, 1500));
    expect(received(calls, hook.secret)).toHaveLength(1);
  });
});

describe("workflow executions", () => {
  it("workflow.execution.completed and .failed with the execution object", async () => {
    const calls: { url: string; body: string; headers: Record<string, string> }[] = [];
    const a = await automationProject(async (request) => {
      calls.push({ url: request.url, body: await request.text(), headers: Object.fromEntries(request.headers) });
      return new Response("ok");
    });
    a.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    const hook = await a.project.api.post("/webhooks", { url: URL_, events: ["workflow.execution.completed", "workflow.execution.failed"] });
    expect(hook.status).toBe(201);
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    const done = await a.createWorkflow({ name: "done", eventName: "go", steps: [{ id: "tag", type: "UPDATE_CONTACT", config: { data: { tagged: true } } }] });
    const broken = await a.createWorkflow({
      name: "broken",
      eventName: "go",
      steps: [{ id: "call", type: "WEBHOOK", config: { url: "https://sneaky.example.net/x" } }],
    });
    a.dns.set("sneaky.example.net", "A", ["10.0.0.1"]);
    await a.track("wf@example.org", "go");
    const completed = await a.executionWhere(done.id, (e) => e.status === "COMPLETED");
    const failed = await a.executionWhere(broken.id, (e) => e.status === "FAILED");
    const events = await eventually(async () => {
      const list = received(calls, hook.body.secret);
      expect(list).toHaveLength(2);
      return list;
    }, 30_000);
    const byType = Object.fromEntries(events.map((e) => [e.type, e.data]));
    expect(byType["workflow.execution.completed"]).toEqual(completed);
    expect(byType["workflow.execution.failed"]).toEqual(failed);
    expect(introspector.get()).toHaveLength(2);
  });
});
