import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/http";
import { type AutomationProject, automationProject } from "../support/workflows";
import type { Contact, EmailList, UpsertedContact } from "../support/api";

/**
 * A double opt-in topic (CONTRACT "Topics"): opting into it leaves the choice PENDING and sends the
 * project's confirmation template; its {{confirmUrl}} makes the choice OPT_IN, once. Topic mail reaches
 * the contact only after that.
 */

type Topics = { data: { items: { key: string; subscription: string }[] } };

/** A project with a verified domain and a confirmation template (project double opt-in itself stays off). */
async function project() {
  const a = await automationProject();
  const templateId = await a.template("Confirm", { subject: "Please confirm", body: '<p><a href="{{confirmUrl}}">confirm</a></p>' });
  const set = await a.project.api.patch("/project", { doubleOptInTemplateId: templateId });
  expect(set.status, JSON.stringify(set.body)).toBe(200);
  const topic = await a.project.api.post<{ id: string }>("/topics", { key: "beta", name: "Beta", defaultSubscription: "OPT_OUT", doubleOptIn: true });
  expect(topic.status, JSON.stringify(topic.body)).toBe(201);
  return a;
}

const choices = async (a: AutomationProject, contactId: string) =>
  Object.fromEntries((await a.project.api.get<Topics>(`/contacts/${contactId}/topics`)).body.data.items.map((t) => [t.key, t.subscription]));

/** The confirmation emails sent to `to`, newest first, with the confirm link of each (its HTML as sent). */
async function confirmations(a: AutomationProject, to: string) {
  const list = (await a.project.api.get<EmailList>(`/emails?limit=100`)).body.data.items.filter((e) => e.to === to && e.subject === "Please confirm");
  return Promise.all(
    list.map(async (e) => {
      const html = (await a.project.api.get<{ html: string | null }>(`/emails/${e.id}`)).body.html ?? "";
      return /href="(http:\/\/edge-mail\.test\/confirm\/[^"]+)"/.exec(html)![1];
    }),
  );
}

describe("a double opt-in topic", () => {
  it("cannot be made without a confirmation template to send (422 naming doubleOptIn)", async () => {
    const a = await automationProject();
    const res = await a.project.api.post("/topics", { key: "beta", name: "Beta", defaultSubscription: "OPT_OUT", doubleOptIn: true });
    expect(expectError(res, 422).errors).toEqual([expect.objectContaining({ field: "doubleOptIn", code: "confirmation_template" })]);
    expect((await a.project.api.get<Topics>("/topics")).body.data.items).toEqual([]);
    const plain = await a.project.api.post<{ id: string }>("/topics", { key: "beta", name: "Beta", defaultSubscription: "OPT_OUT" });
    expectError(await a.project.api.patch(`/topics/${plain.body.id}`, { doubleOptIn: true }), 422);
  });

  it("an opt-in through POST /contacts is PENDING and sends the confirmation; its link makes it OPT_IN once, and topic mail then reaches the contact", async () => {
    const a = await project();
    const created = await a.project.api.post<UpsertedContact>("/contacts", { email: "ada@example.org", subscribed: true, topics: { beta: true } });
    expect(created.status, JSON.stringify(created.body)).toBeLessThan(300);
    expect(await choices(a, created.body.id)).toEqual({ beta: "PENDING" });
    // Not confirmed: topic mail refuses the contact.
    const early = await a.project.api.post("/v1/send", { to: "ada@example.org", from: a.from, subject: "Beta news", body: "<p>b</p>", topic: "beta" });
    expect(expectError(early, 400).errors?.[0]).toMatchObject({ code: "TOPIC" });

    const [link] = await confirmations(a, "ada@example.org");
    const page = await call<string>("GET", new URL(link).pathname);
    expect(page.status).toBe(200);
    expect(page.body).toContain("Confirm your subscription");
    const confirmed = await call<string>("POST", new URL(link).pathname);
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toContain("Subscription confirmed");
    expect(await choices(a, created.body.id)).toEqual({ beta: "OPT_IN" });
    const events = (
      await a.project.api.get<{ data: { items: { name: string; data: { topic?: string; source?: string } }[] } }>(`/events?contactId=${created.body.id}`)
    ).body.data.items;
    expect(events.filter((e) => e.name === "topic.opted_in").map((e) => e.data)).toEqual([{ topic: "beta", source: "confirm" }]);

    const sent = await a.project.api.post("/v1/send", { to: "ada@example.org", from: a.from, subject: "Beta news", body: "<p>b</p>", topic: "beta" });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);

    // Opted out afterwards, the old link does not opt the contact back in.
    expect((await a.project.api.patch(`/contacts/${created.body.id}/topics`, { topics: [{ key: "beta", subscription: "OPT_OUT" }] })).status).toBe(200);
    await call("POST", new URL(link).pathname);
    expect(await choices(a, created.body.id)).toEqual({ beta: "OPT_OUT" });
  });

  it("PATCH /contacts/{id}/topics and a secret-key /v1/track send it too, and never to a contact OPT_IN already", async () => {
    const a = await project();
    const created = await a.project.api.post<UpsertedContact>("/contacts", { email: "grace@example.org", subscribed: true });
    expect(await confirmations(a, "grace@example.org")).toHaveLength(0);
    const patched = await a.project.api.patch(`/contacts/${created.body.id}/topics`, { topics: [{ key: "beta", subscription: "OPT_IN" }] });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const [link] = await confirmations(a, "grace@example.org");
    expect((await call("POST", new URL(link).pathname)).status).toBe(200);
    expect(await choices(a, created.body.id)).toEqual({ beta: "OPT_IN" });
    // OPT_IN already: opting in again sends nothing.
    expect((await a.project.api.post("/v1/track", { email: "grace@example.org", event: "x", topics: { beta: true } })).status).toBe(200);
    expect(await confirmations(a, "grace@example.org")).toHaveLength(1);

    // A new address through /v1/track: created, PENDING, and sent its confirmation.
    const tracked = await a.track("lin@example.org", "signed_up");
    expect(tracked.contact).toBeDefined();
    expect((await a.project.api.post("/v1/track", { email: "lin@example.org", event: "x", topics: { beta: true } })).status).toBe(200);
    expect(await confirmations(a, "lin@example.org")).toHaveLength(1);
    const lin = (await a.project.api.get<Contact>(`/contacts/${tracked.contact}`)).body;
    expect(await choices(a, lin.id)).toEqual({ beta: "PENDING" });
  });
});
