import { introspectWorkflow } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { campaignSetup } from "../../support/campaigns";
import { verifiedDomain } from "../../support/sending";
import { automationProject } from "../../support/workflows";
import { recordedEvents, receiver, webhookProject } from "../../support/webhooks";
import { eventually } from "../../support/wait";
import type { CampaignResponse, Contact, DomainList, UpsertedContact, WebhookWithSecret } from "../../support/api";

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
    const list = await p.api.get<DomainList>("/domains");
    expect((await p.api.post(`/domains/${list.body.data.items[0].id}/verify`)).status).toBe(200);
    expect(await recordedEvents(p.id)).toEqual(["domain.verified"]);
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
    const hook = await a.project.api.post<WebhookWithSecret>("/webhooks", { url: URL_, events: ["workflow.execution.completed", "workflow.execution.failed"] });
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

describe("contact events", () => {
  it("created, updated, unsubscribed, subscribed and deleted, each with the contact object; filters and projects apply", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const other = await webhookProject("other");
    const all = await p.createWebhook({ url: URL_ });
    const createdOnly = await p.createWebhook({ url: "https://other.example.net/created", events: ["contact.created"] });
    const elsewhere = await other.createWebhook({ url: "https://other.example.net/elsewhere" });

    const created = await p.call<UpsertedContact>("POST", "/contacts", { email: "Ada@Example.org", data: { plan: "free" } });
    expect(created.status).toBe(201);
    const { _meta, ...view } = created.body;
    const updated = await p.call<UpsertedContact>("POST", "/contacts", { email: "ada@example.org", data: { plan: "pro" }, subscribed: false });
    const patched = await p.call<Contact>("PATCH", `/contacts/${view.id}`, { subscribed: true });
    expect(patched.status).toBe(200);
    expect((await p.call("DELETE", `/contacts/${view.id}`)).status).toBe(204);
    // Another project's writes never reach this project's endpoints.
    await other.call("POST", "/contacts", { email: "zed@example.org" });

    const events = await eventually(async () => {
      const list = received(calls, all.secret);
      expect(list).toHaveLength(6);
      return list;
    });
    const { _meta: _m, ...updatedView } = updated.body;
    expect(events.map((e) => e.type).sort()).toEqual(
      ["contact.created", "contact.deleted", "contact.subscribed", "contact.unsubscribed", "contact.updated", "contact.updated"].sort(),
    );
    const byType = (type: string) => events.filter((e) => e.type === type).map((e) => e.data);
    expect(byType("contact.created")).toEqual([view]);
    expect(byType("contact.unsubscribed")).toEqual([updatedView]);
    expect(byType("contact.updated")).toContainEqual(updatedView);
    expect(byType("contact.updated")).toContainEqual(patched.body);
    expect(byType("contact.subscribed")).toEqual([patched.body]);
    expect(byType("contact.deleted")).toEqual([patched.body]);
    for (const e of events) expect(Math.abs(Date.parse(e.timestamp) - Date.now())).toBeLessThan(60_000);

    await eventually(async () => expect(received(calls, createdOnly.secret, "https://other.example.net/created")).toHaveLength(1));
    expect(received(calls, createdOnly.secret, "https://other.example.net/created")[0]).toMatchObject({ type: "contact.created", data: view });
    await eventually(async () => expect(received(calls, elsewhere.secret, "https://other.example.net/elsewhere")).toHaveLength(1));
    expect(received(calls, elsewhere.secret, "https://other.example.net/elsewhere")[0].data.email).toBe("zed@example.org");
  });

  it("/v1/track: contact.created for a new contact; a public key never changes an existing one, so records nothing more", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_, events: ["contact.created", "contact.updated", "contact.unsubscribed"] });
    expect((await p.publicApi.post("/v1/track", { email: "bo@example.org", event: "visit", data: { page: "/" } })).status).toBe(200);
    expect((await p.publicApi.post("/v1/track", { email: "bo@example.org", event: "visit", subscribed: false })).status).toBe(200);
    // A secret key with data changes the contact; an event without data does not.
    expect((await p.api.post("/v1/track", { email: "bo@example.org", event: "visit" })).status).toBe(200);
    expect((await p.api.post("/v1/track", { email: "bo@example.org", event: "buy", data: { plan: "pro" }, subscribed: false })).status).toBe(200);
    const events = await eventually(async () => {
      const list = received(calls, hook.secret);
      expect(list).toHaveLength(3);
      return list;
    });
    expect(events.map((e) => e.type).sort()).toEqual(["contact.created", "contact.unsubscribed", "contact.updated"]);
    expect(events.find((e) => e.type === "contact.created")!.data).toMatchObject({ email: "bo@example.org", subscribed: true, data: {} });
    expect(events.find((e) => e.type === "contact.updated")!.data).toMatchObject({ subscribed: false, data: { plan: "pro" } });
  });
});

describe("campaigns", () => {
  it("campaign.sent once, with the campaign, when the last email of a campaign is handed to the provider", async () => {
    const s = await campaignSetup();
    const calls: { url: string; body: string; headers: Record<string, string> }[] = [];
    s.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    s.serve(async (request) => {
      if (!request.url.startsWith(URL_)) return undefined;
      calls.push({ url: request.url, body: await request.text(), headers: Object.fromEntries(request.headers) });
      return new Response("ok");
    });
    const hook = await s.request<WebhookWithSecret>("POST", "/webhooks", { url: URL_, events: ["campaign.sent"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    await s.addContacts([{ email: "one@example.com" }, { email: "two@example.com" }, { email: "three@example.com" }]);
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    await s.pump();
    expect((await s.request<CampaignResponse>("GET", `/campaigns/${campaign.id}`)).body.data.status).toBe("SENT");
    const events = await eventually(async () => {
      const list = received(calls, hook.body.secret);
      expect(list).toHaveLength(1);
      return list;
    });
    expect(events[0]).toMatchObject({ type: "campaign.sent", data: { id: campaign.id, name: "Spring news", status: "SENT", sentAt: expect.any(String) } });
  });
});
