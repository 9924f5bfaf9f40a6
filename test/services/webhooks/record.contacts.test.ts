import { introspectWorkflow } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sendingSetup } from "../../support/sending";
import { automationProject } from "../../support/workflows";
import { recordedEvents } from "../../support/webhooks";
import { eventually } from "../../support/wait";
import type { Contact, ContactList, UpsertedContact, WebhookWithSecret } from "../../support/api";

afterEach(() => vi.restoreAllMocks());

/** One receiver path per test: a late retry from an earlier test never lands in a later one's list. */
const SEND_URL = "https://hooks.example.net/send";
const QUOTA_URL = "https://hooks.example.net/quota";
const STEP_URL = "https://hooks.example.net/step";
const CONTACT_TYPES = ["contact.created", "contact.updated", "contact.subscribed", "contact.unsubscribed"];

interface ContactView {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}
interface ContactEvent {
  type: string;
  timestamp: string;
  data: ContactView;
}

/** The contact events an endpoint received, verified with its secret. */
function receivedEvents(calls: { url: string; body: string; headers: Record<string, string> }[], secret: string, url: string) {
  return calls.filter((c) => c.url === url).map((c) => new Webhook(secret).verify(c.body, c.headers) as ContactEvent);
}

/** Waits until `n` events arrived; that no other follows is read on the record: the project recorded exactly `n`. */
async function exactly(list: () => ContactEvent[], n: number, projectId: string) {
  await eventually(async () => expect(list()).toHaveLength(n));
  expect(await recordedEvents(projectId, CONTACT_TYPES)).toHaveLength(n);
  expect(list()).toHaveLength(n);
  return list();
}

describe("contact events of POST /v1/send", () => {
  it("contact.created per new recipient; .updated and .unsubscribed when a send changes an existing contact; nothing when it does not", async () => {
    const s = await sendingSetup();
    const calls: { url: string; body: string; headers: Record<string, string> }[] = [];
    s.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    s.serve(async (request) => {
      if (request.url !== SEND_URL) return undefined;
      calls.push({ url: request.url, body: await request.text(), headers: Object.fromEntries(request.headers) });
      return new Response("ok");
    });
    const hook = await s.post<WebhookWithSecret>("/webhooks", { url: SEND_URL, events: CONTACT_TYPES });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const events = () => receivedEvents(calls, hook.body.secret, SEND_URL);
    const contact = async (id: string) => (await s.get<Contact>(`/contacts/${id}`)).body;

    // Two new recipients: one contact.created each, with the contact as GET /contacts/{id} shows it.
    const first = await s.send({ to: ["ann@example.org", "Bea@Example.org"], from: s.from, subject: "Hi", body: "<p>hi</p>" });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const ids = first.body.data.emails.map((e) => e.contact.id);
    const created = await exactly(events, 2, s.project.id);
    expect(created.map((e) => e.type)).toEqual(["contact.created", "contact.created"]);
    expect(created.map((e) => e.data).sort((a, b) => a.email.localeCompare(b.email))).toEqual(
      await Promise.all([...ids].sort().map(async (id) => contact(id))).then((list) => list.sort((a, b) => a.email.localeCompare(b.email))),
    );

    // A send creates contacts unsubscribed unless it says `subscribed: true`; Ann opts in (contact.updated and .subscribed).
    expect(created.every((e) => e.data.subscribed === false)).toBe(true);
    expect((await s.request("PATCH", `/contacts/${ids[0]}`, { subscribed: true })).status).toBe(200);
    await exactly(events, 4, s.project.id);

    // Sending again without data or subscription changes no contact: no event.
    expect((await s.send({ to: "ann@example.org", from: s.from, subject: "Again", body: "<p>again</p>" })).status).toBe(200);
    await exactly(events, 4, s.project.id);

    // Data and `subscribed: false`: contact.updated and contact.unsubscribed for the existing contact,
    // contact.created (already unsubscribed, with the data) for a new one.
    const changed = await s.send({
      to: ["ann@example.org", "cy@example.org"],
      from: s.from,
      subject: "Changed",
      body: "<p>changed</p>",
      data: { plan: "pro", once: { value: 1, persistent: false } },
      subscribed: false,
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    const all = await exactly(events, 7, s.project.id);
    const later = all.slice(4);
    const ann = await contact(ids[0]);
    expect(ann).toMatchObject({ email: "ann@example.org", subscribed: false, data: { plan: "pro" } });
    expect(
      later
        .filter((e) => e.data.email === "ann@example.org")
        .map((e) => e.type)
        .sort(),
    ).toEqual(["contact.unsubscribed", "contact.updated"]);
    for (const e of later.filter((e) => e.data.email === "ann@example.org")) expect(e.data).toEqual(ann);
    const cy = later.filter((e) => e.data.email === "cy@example.org");
    expect(cy.map((e) => e.type)).toEqual(["contact.created"]);
    expect(cy[0].data).toMatchObject({ subscribed: false, data: { plan: "pro" } });
  }, 90_000);

  it("a send the write batch refuses (daily email quota) records no contact event", async () => {
    const s = await sendingSetup({ QUOTA_EMAILS_PER_DAY: "1" } as never);
    const calls: { url: string; body: string; headers: Record<string, string> }[] = [];
    s.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    s.serve(async (request) => {
      if (request.url !== QUOTA_URL) return undefined;
      calls.push({ url: request.url, body: await request.text(), headers: Object.fromEntries(request.headers) });
      return new Response("ok");
    });
    const hook = await s.post<WebhookWithSecret>("/webhooks", { url: QUOTA_URL, events: CONTACT_TYPES });
    expect(hook.status).toBe(201);
    const events = () => receivedEvents(calls, hook.body.secret, QUOTA_URL);
    expect((await s.send({ to: "one@example.org", from: s.from, subject: "1", body: "<p>1</p>" })).status).toBe(200);
    const refused = await s.send({ to: ["two@example.org", "three@example.org"], from: s.from, subject: "2", body: "<p>2</p>" });
    expect(refused.status, JSON.stringify(refused.body)).toBe(429);
    expect((await s.get<ContactList>("/contacts?limit=10")).body.contacts.map((c) => c.email)).toEqual(["one@example.org"]);
    const list = await exactly(events, 1, s.project.id);
    expect(list[0]).toMatchObject({ type: "contact.created", data: { email: "one@example.org" } });
  });
});

describe("contact events of the workflow UPDATE_CONTACT step", () => {
  it("contact.updated and contact.unsubscribed with the contact as the step left it", async () => {
    const calls: { url: string; body: string; headers: Record<string, string> }[] = [];
    const a = await automationProject(async (request) => {
      calls.push({ url: request.url, body: await request.text(), headers: Object.fromEntries(request.headers) });
      return new Response("ok");
    });
    a.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    const contact = await a.project.api.post<UpsertedContact>("/contacts", { email: "wf@example.org", data: { plan: "free" } });
    expect(contact.status).toBe(201);
    const hook = await a.project.api.post<WebhookWithSecret>("/webhooks", {
      url: STEP_URL,
      events: ["contact.updated", "contact.unsubscribed", "contact.subscribed"],
    });
    expect(hook.status).toBe(201);
    const events = () => receivedEvents(calls, hook.body.secret, STEP_URL);
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    const flow = await a.createWorkflow({
      name: "tag",
      eventName: "go",
      steps: [{ id: "tag", type: "UPDATE_CONTACT", config: { data: { plan: "pro", tagged: true }, subscribed: false } }],
    });
    await a.track("wf@example.org", "go");
    await a.executionWhere(flow.id, (e) => e.status === "COMPLETED");
    const list = await exactly(events, 2, a.project.id);
    const now = (await a.project.api.get<Contact>(`/contacts/${contact.body.id}`)).body;
    expect(now).toMatchObject({ subscribed: false, data: { plan: "pro", tagged: true } });
    expect(list.map((e) => e.type).sort()).toEqual(["contact.unsubscribed", "contact.updated"]);
    for (const e of list) expect(e.data).toEqual(now);
    expect(introspector.get()).toHaveLength(1);
  });
});
