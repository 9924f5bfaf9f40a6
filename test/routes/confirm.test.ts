import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../src/db/client";
import { emails, suppressions } from "../../src/db/schema";
import { confirmUrl, unsubscribeToken } from "../../src/services/tracking/links";
import { call, expectError } from "../support/http";
import { type AutomationProject, automationProject } from "../support/workflows";
import { eventually } from "../support/wait";

vi.setConfig({ testTimeout: 60_000 });
afterEach(() => vi.restoreAllMocks());

const SECRET = "test-link-signing-secret-0123456789abcdef";

interface Settings {
  data: { id: string; trackingEnabled: boolean; doubleOptIn: boolean; doubleOptInTemplateId: string | null };
}
interface Tracked {
  data: { contact: string; event: string };
}
interface Contact {
  id: string;
  email: string;
  subscribed: boolean;
}
interface EmailList {
  data: { items: { id: string; to: string; subject: string; status: string }[]; total: number };
}
interface Campaign {
  data: { id: string; status: string };
}

/** A project with a verified domain and double opt-in on, its confirmation template using {{confirmUrl}}. */
async function optInProject() {
  const a = await automationProject();
  const templateId = await a.template("Confirm", {
    subject: "Please confirm your subscription",
    body: '<p>Hi {{email}}, <a href="{{confirmUrl}}">confirm</a></p>',
  });
  const on = await a.project.api.patch<Settings>("/project", { doubleOptIn: true, doubleOptInTemplateId: templateId });
  expect(on.status, JSON.stringify(on.body)).toBe(200);
  expect(on.body.data).toMatchObject({ doubleOptIn: true, doubleOptInTemplateId: templateId });
  return { ...a, templateId };
}

async function pkTrack(a: AutomationProject, email: string, body: Record<string, unknown> = {}) {
  const res = await a.project.publicApi.post<Tracked>("/v1/track", { email, event: "signed-up", ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.contact;
}

const contact = async (a: AutomationProject, id: string) => (await a.project.api.get<Contact>(`/contacts/${id}`)).body;

/** The confirm link in the confirmation email the project sent to this address (its HTML as sent, from GET /emails/{id}). */
async function confirmLink(a: AutomationProject, to: string): Promise<string> {
  const [row] = await getDb(env.DB)
    .select({ id: emails.id })
    .from(emails)
    .where(and(eq(emails.projectId, a.project.id), eq(emails.toAddress, to)));
  expect(row, `no email to ${to}`).toBeDefined();
  const sent = await a.project.api.get<{ html: string | null }>(`/emails/${row.id}`);
  const html = sent.body.html ?? "";
  const match = /href="(http:\/\/edge-mail\.test\/confirm\/[^"]+)"/.exec(html);
  expect(match, html).not.toBeNull();
  return match![1];
}

const campaignTo = async (a: AutomationProject) => {
  const created = await a.project.api.post<Campaign>("/campaigns", { name: "News", subject: "News", body: "<p>n</p>", from: a.from, audienceType: "ALL" });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body.data.id;
};

describe("double opt-in", () => {
  it("is off by default: a pk_ contact is subscribed at once and gets no email, as before", async () => {
    const a = await automationProject();
    const settings = await a.project.api.get<Settings>("/project");
    expect(settings.status).toBe(200);
    expect(settings.body.data).toMatchObject({ id: a.project.id, trackingEnabled: true, doubleOptIn: false, doubleOptInTemplateId: null });
    const id = await pkTrack(a, "visitor@example.org");
    expect(await contact(a, id)).toMatchObject({ email: "visitor@example.org", subscribed: true });
    expect((await a.project.api.get<EmailList>("/emails")).body.data.total).toBe(0);
    // The settings are the secret key's: a public key is refused.
    expectError(await a.project.publicApi.get("/project"), 403, "FORBIDDEN");
  });

  it("cannot be turned on without a usable template (422 naming doubleOptInTemplateId); nothing changes", async () => {
    const a = await automationProject();
    const noLink = await a.template("No link", { body: "<p>Welcome</p>" });
    const unverified = await a.template("Unverified", { body: "<p>{{confirmUrl}}</p>", from: "hi@not-verified.example" });
    const noFrom = await a.template("No from", { body: "<p>{{confirmUrl}}</p>", from: null });
    const theirs = await (await automationProject()).template("Theirs", { body: "<p>{{confirmUrl}}</p>" });
    const cases: [Record<string, unknown>, string][] = [
      [{ doubleOptIn: true }, "needs a confirmation template"],
      [{ doubleOptIn: true, doubleOptInTemplateId: "nope" }, "No template"],
      [{ doubleOptIn: true, doubleOptInTemplateId: theirs }, "No template"],
      [{ doubleOptIn: true, doubleOptInTemplateId: noLink }, "{{confirmUrl}}"],
      [{ doubleOptIn: true, doubleOptInTemplateId: unverified }, "not on a verified domain"],
      [{ doubleOptIn: true, doubleOptInTemplateId: noFrom }, "from address"],
    ];
    for (const [body, text] of cases) {
      const error = expectError(await a.project.api.patch("/project", body), 422, "VALIDATION_ERROR");
      expect(error.errors?.[0].field).toBe("doubleOptInTemplateId");
      expect(error.errors?.[0].message).toContain(text);
    }
    expectError(await a.project.api.patch("/project", { doubleOptIn: "yes" }), 422);
    expectError(await a.project.api.patch("/project", { other: 1 }), 422);
    expect((await a.project.api.get<Settings>("/project")).body.data).toMatchObject({ doubleOptIn: false, doubleOptInTemplateId: null });
  });

  it("on: a pk_ contact starts unsubscribed, gets the confirmation email, is in no campaign audience; confirming subscribes it and starts CONTACT_SUBSCRIBED workflows", async () => {
    const a = await optInProject();
    const welcome = await a.createWorkflow({ name: "welcome", trigger: { type: "CONTACT_SUBSCRIBED" }, steps: [] });
    const id = await pkTrack(a, "Reader@Example.org");
    expect(await contact(a, id)).toMatchObject({ email: "reader@example.org", subscribed: false });

    // The confirmation email is delivered (capture provider), transactional.
    await eventually(async () => expect(await a.delivered()).toEqual(["reader@example.org: Please confirm your subscription"]));
    const link = await confirmLink(a, "reader@example.org");

    // Not in a marketing audience yet.
    const campaign = await campaignTo(a);
    const empty = expectError(await a.project.api.post(`/campaigns/${campaign}/send`), 400, "INVALID_STATE");
    expect(empty.message).toContain("audience is empty");
    expect(await a.executions(welcome.id)).toEqual([]);

    // Opening the link (or a scanner prefetching it) changes nothing: a page with a button.
    const page = await call<string>("GET", link);
    expect(page.status).toBe(200);
    expect(page.body).toContain("Confirm your subscription");
    expect(page.body).toContain(`<form method="post" action="${new URL(link).pathname}">`);
    expect((await contact(a, id)).subscribed).toBe(false);

    const confirmed = await call<string>("POST", link);
    expect(confirmed.status).toBe(200);
    expect(confirmed.body).toContain("Subscription confirmed");
    expect((await contact(a, id)).subscribed).toBe(true);
    await a.executionWhere(welcome.id, (e) => e.contactId === id);
    // Idempotent: the second confirm records nothing new.
    expect((await call<string>("POST", link)).status).toBe(200);
    const subscribedEvents = (await a.project.api.get<{ data: { items: { name: string }[] } }>(`/events?contactId=${id}`)).body.data.items.filter(
      (e) => e.name === "contact.subscribed",
    );
    expect(subscribedEvents).toHaveLength(1);
    expect((await call<string>("GET", link)).body).toContain("already confirmed");

    // Now the campaign has its audience.
    const sent = await a.project.api.post<Campaign>(`/campaigns/${campaign}/send`);
    expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(300);
  });

  it("on: an unconfirmed pk_ contact starts no CONTACT_CREATED workflow (its TRANSACTIONAL step mails no one); confirming starts it, once however often confirmed", async () => {
    const a = await optInProject();
    const welcomeTemplate = await a.template("Welcome", { subject: "Welcome aboard", body: "<p>Welcome</p>" });
    const created = await a.createWorkflow({
      name: "onboard",
      trigger: { type: "CONTACT_CREATED" },
      steps: [{ id: "hello", type: "SEND_EMAIL", config: { templateId: welcomeTemplate } }],
    });
    const id = await pkTrack(a, "typed-in@example.org");
    expect((await contact(a, id)).subscribed).toBe(false);
    await eventually(async () => expect(await a.delivered()).toEqual(["typed-in@example.org: Please confirm your subscription"]));
    // A contact a secret key creates still starts it at creation (the control: the workflow does run).
    const control = (await a.track("control@example.org", "signed-up")).contact;
    await a.executionWhere(created.id, (e) => e.contactId === control);
    expect((await a.executions(created.id)).filter((e) => e.contactId === id)).toEqual([]);
    expect((await a.delivered()).filter((m) => m.startsWith("typed-in@"))).toEqual(["typed-in@example.org: Please confirm your subscription"]);

    const link = await confirmLink(a, "typed-in@example.org");
    expect((await call<string>("POST", link)).status).toBe(200);
    await a.executionWhere(created.id, (e) => e.contactId === id);
    await eventually(async () =>
      expect((await a.delivered()).filter((m) => m.startsWith("typed-in@"))).toEqual([
        "typed-in@example.org: Please confirm your subscription",
        "typed-in@example.org: Welcome aboard",
      ]),
    );
    // Confirmed again: no second start. After an unsubscribe the used link subscribes no one (410);
    // subscribed again through the API, the contact still gets no second CONTACT_CREATED start.
    expect((await call<string>("POST", link)).status).toBe(200);
    expect((await a.project.api.patch(`/contacts/${id}`, { subscribed: false })).status).toBe(200);
    expect((await call<string>("POST", link)).status).toBe(410);
    expect((await contact(a, id)).subscribed).toBe(false);
    expect((await a.project.api.patch(`/contacts/${id}`, { subscribed: true })).status).toBe(200);
    await a.executionWhere(created.id, (e) => e.contactId === control);
    expect((await a.executions(created.id)).filter((e) => e.contactId === id)).toHaveLength(1);
  });

  it("a forged link, an unsubscribe token, or another project's link is refused; each project's contact is confirmed on its own", async () => {
    const a = await optInProject();
    const b = await optInProject();
    const inA = await pkTrack(a, "both@example.org");
    const inB = await pkTrack(b, "both@example.org");
    const link = await confirmLink(a, "both@example.org");
    const token = new URL(link).pathname.split("/").pop()!;
    const emailId = token.slice(0, token.lastIndexOf("."));

    const forged = `/confirm/${emailId}.${"0".repeat(43)}`;
    expect((await call<string>("POST", forged)).status).toBe(400);
    expect((await call<string>("GET", forged)).body).toContain("Invalid confirmation link");
    // A valid signature for another purpose (the unsubscribe link of the same email) is not a confirm token.
    expect((await call<string>("POST", `/confirm/${await unsubscribeToken(SECRET, emailId)}`)).status).toBe(400);
    // A link naming an email that does not exist.
    const otherEmail = crypto.randomUUID();
    expect((await call<string>("POST", await confirmUrl("http://edge-mail.test", SECRET, otherEmail))).status).toBe(404);
    expect((await contact(a, inA)).subscribed).toBe(false);

    // A's link confirms A's contact only.
    expect((await call<string>("POST", link)).status).toBe(200);
    expect((await contact(a, inA)).subscribed).toBe(true);
    expect((await contact(b, inB)).subscribed).toBe(false);
  });

  it("a confirm link is single-use: replayed after the contact unsubscribed it answers 410 and the unsubscribe stands", async () => {
    const a = await optInProject();
    const id = await pkTrack(a, "replay@example.org");
    const link = await confirmLink(a, "replay@example.org");
    const token = new URL(link).pathname.split("/").pop()!;
    const emailId = token.slice(0, token.lastIndexOf("."));
    expect((await call<string>("POST", link)).status).toBe(200);
    expect((await contact(a, id)).subscribed).toBe(true);

    // The one-click unsubscribe of the same email, then the confirm link again (forwarded mail, a shared mailbox).
    const unsubscribed = await call("POST", `/unsubscribe/${await unsubscribeToken(SECRET, emailId)}`, {
      rawBody: "List-Unsubscribe=One-Click",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(unsubscribed.status).toBe(200);
    expect((await contact(a, id)).subscribed).toBe(false);

    const replayed = await call<string>("POST", link);
    expect(replayed.status).toBe(410);
    expect(replayed.body).toContain("Link already used");
    const page = await call<string>("GET", link);
    expect(page.status).toBe(410);
    expect(page.body).not.toContain("<form");
    expect((await contact(a, id)).subscribed).toBe(false);
    const names = (await a.project.api.get<{ data: { items: { name: string }[] } }>(`/events?contactId=${id}`)).body.data.items.map((e) => e.name);
    expect(names.filter((n) => n === "contact.subscribed")).toHaveLength(1);
    expect(names[0]).toBe("contact.unsubscribed");
  });

  it("secret-key contacts, and existing contacts a pk_ tracks, get no confirmation and keep their subscription", async () => {
    const a = await optInProject();
    const tracked = await a.project.api.post<Tracked>("/v1/track", { email: "server@example.org", event: "paid" });
    expect(tracked.status).toBe(200);
    expect((await contact(a, tracked.body.data.contact)).subscribed).toBe(true);
    const created = await a.project.api.post<Contact>("/contacts", { email: "added@example.org" });
    expect(created.body.subscribed).toBe(true);
    // A pk_ event for an existing contact: unchanged, no email (and the answer names no existing contact).
    expect(await pkTrack(a, "server@example.org")).not.toBe(tracked.body.data.contact);
    expect((await contact(a, tracked.body.data.contact)).subscribed).toBe(true);
    // A pk_ that says subscribed: false asks for nothing to confirm.
    const quiet = await pkTrack(a, "quiet@example.org", { subscribed: false });
    expect((await contact(a, quiet)).subscribed).toBe(false);
    expect((await a.project.api.get<EmailList>("/emails")).body.data.total).toBe(0);
  });

  it("the confirmation template cannot be deleted while double opt-in is on; turning it off restores the old behaviour", async () => {
    const a = await optInProject();
    expectError(await a.project.api.delete(`/templates/${a.templateId}`), 400, "INVALID_STATE");
    const off = await a.project.api.patch<Settings>("/project", { doubleOptIn: false });
    expect(off.body.data).toMatchObject({ doubleOptIn: false, doubleOptInTemplateId: a.templateId });
    const id = await pkTrack(a, "later@example.org");
    expect((await contact(a, id)).subscribed).toBe(true);
    expect((await a.project.api.delete(`/templates/${a.templateId}`)).status).toBe(204);
  });

  it("concurrent pk_ tracks of one new address send one confirmation; a suppressed address gets none", async () => {
    const a = await optInProject();
    await Promise.all(["x1@example.org", "x2@example.org", "x1@example.org"].map((email) => pkTrack(a, email)));
    const list = (await a.project.api.get<EmailList>("/emails")).body.data.items.map((e) => e.to).sort();
    expect(list).toEqual(["x1@example.org", "x2@example.org"]);
    // A suppressed address (it bounced or complained before) is created unsubscribed and sent nothing.
    await getDb(env.DB).insert(suppressions).values({ projectId: a.project.id, email: "bounced@example.org", reason: "BOUNCE" });
    const bounced = await pkTrack(a, "bounced@example.org");
    expect((await contact(a, bounced)).subscribed).toBe(false);
    expect((await a.project.api.get<EmailList>("/emails")).body.data.total).toBe(2);
  });
});
