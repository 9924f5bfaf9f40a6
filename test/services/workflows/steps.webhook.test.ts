import { introspectWorkflow } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { WEBHOOK_RETRIES } from "../../../src/entrypoints/automation";
import { automationProject } from "../../support/workflows";

vi.setConfig({ testTimeout: 60_000 });
afterEach(() => vi.restoreAllMocks());

/** A webhook receiver at the HTTP boundary: records each request; answers with `status()`. */
function receiver(status: () => number = () => 200) {
  const requests: { url: string; method: string; headers: Record<string, string>; body: string }[] = [];
  return {
    requests,
    async handle(request: Request) {
      requests.push({ url: request.url, method: request.method, headers: Object.fromEntries(request.headers), body: await request.text() });
      return new Response("ok", { status: status() });
    },
  };
}

const webhookStep = (url: string, extra: Record<string, unknown> = {}) => ({ id: "notify", type: "WEBHOOK", config: { url, ...extra } });

describe("WEBHOOK steps", () => {
  it("signs each call as Standard Webhooks does: the receiver verifies it with the workflow's secret", async () => {
    const hooks = receiver();
    const a = await automationProject((request) => hooks.handle(request));
    a.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    const workflow = await a.createWorkflow({
      name: "notify",
      eventName: "purchase",
      steps: [
        webhookStep("https://hooks.example.net/in?src=edge", {
          method: "PUT",
          headers: { "X-Api-Key": "k-123" },
          body: { text: "{{firstName}} bought {{data.item}}", email: "{{email}}", fixed: 7 },
        }),
      ],
    });
    const { contact } = await a.track("lee@example.org", "purchase", { firstName: "Lee", item: "a <lamp>" });
    const execution = await a.executionWhere(workflow.id, (e) => e.status === "COMPLETED");
    expect(execution.history).toMatchObject([{ stepId: "notify", type: "WEBHOOK", status: "COMPLETED", outcome: "HTTP 200" }]);

    expect(hooks.requests).toHaveLength(1);
    const [call] = hooks.requests;
    expect(call).toMatchObject({ url: "https://hooks.example.net/in?src=edge", method: "PUT" });
    expect(call.headers["x-api-key"]).toBe("k-123");
    expect(call.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(call.body)).toEqual({ text: "Lee bought a <lamp>", email: "lee@example.org", fixed: 7 });
    expect(call.headers["webhook-id"]).toBe(`msg_${execution.id}_notify`);
    // The receiver's check: the library of the Standard Webhooks spec, with the secret shown at creation.
    expect(new Webhook(workflow.webhookSecret).verify(call.body, call.headers)).toEqual(JSON.parse(call.body));
    // A different secret, or a changed body, does not verify.
    const other = await a.createWorkflow({ name: "other", eventName: "x" });
    expect(() => new Webhook(other.webhookSecret).verify(call.body, call.headers)).toThrow();
    expect(() => new Webhook(workflow.webhookSecret).verify(call.body.replace("Lee", "Eve"), call.headers)).toThrow();
    expect(contact).toBe(execution.contactId);
    expect(introspector.get()).toHaveLength(1);
  });

  it("without a body it posts the execution and the contact", async () => {
    const hooks = receiver();
    const a = await automationProject((request) => hooks.handle(request));
    a.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    const workflow = await a.createWorkflow({ name: "default body", eventName: "ping", steps: [webhookStep("https://hooks.example.net/")] });
    const { contact } = await a.track("max@example.org", "ping", { plan: "pro" });
    const execution = await a.executionWhere(workflow.id, (e) => e.status === "COMPLETED");
    expect(hooks.requests[0].method).toBe("POST");
    expect(JSON.parse(hooks.requests[0].body)).toEqual({
      workflowId: workflow.id,
      executionId: execution.id,
      stepId: "notify",
      contact: { id: contact, email: "max@example.org", subscribed: true, data: { plan: "pro" } },
    });
  });

  it("a receiver that keeps failing is retried by the step, then the execution is FAILED", async () => {
    const hooks = receiver(() => 503);
    const a = await automationProject((request) => hooks.handle(request));
    a.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    await introspector.modifyAll(async (m) => {
      await m.disableRetryDelays();
    });
    const workflow = await a.createWorkflow({ name: "down", eventName: "ping", steps: [webhookStep("https://hooks.example.net/")] });
    await a.track("ned@example.org", "ping");
    const execution = await a.executionWhere(workflow.id, (e) => e.status === "FAILED", 30_000);
    expect(execution.error).toBe("The webhook answered HTTP 503");
    expect(execution.history).toMatchObject([{ stepId: "notify", status: "FAILED", outcome: "The webhook answered HTTP 503" }]);
    expect(hooks.requests).toHaveLength(WEBHOOK_RETRIES + 1);
    // Every attempt carries the same message id, so the receiver can drop duplicates.
    expect(new Set(hooks.requests.map((r) => r.headers["webhook-id"])).size).toBe(1);
    await introspector.get()[0].waitForStatus("errored");
  });

  describe("SSRF: names that resolve to non-public addresses are refused at call time, without a request", () => {
    for (const [type, address] of [
      ["A", "10.0.0.5"],
      ["A", "127.0.0.1"],
      ["A", "169.254.169.254"],
      ["A", "192.168.1.20"],
      ["AAAA", "::1"],
      ["AAAA", "fd00::1"],
      ["AAAA", "::ffff:127.0.0.1"],
    ] as const) {
      it(`${type} ${address}`, async () => {
        const hooks = receiver();
        const a = await automationProject((request) => hooks.handle(request));
        a.dns.set("sneaky.example.net", type, [address]);
        if (type === "AAAA") a.dns.set("sneaky.example.net", "A", ["93.184.216.34"]);
        await using introspector = await introspectWorkflow(env.AUTOMATIONS);
        const workflow = await a.createWorkflow({ name: "ssrf", eventName: "ping", steps: [webhookStep("https://sneaky.example.net/hook")] });
        await a.track("oz@example.org", "ping");
        const execution = await a.executionWhere(workflow.id, (e) => e.status === "FAILED");
        expect(execution.error).toContain(`Refused: sneaky.example.net resolves to ${address}`);
        expect(hooks.requests).toHaveLength(0);
        await introspector.get()[0].waitForStatus("errored");
      });
    }
  });
});
