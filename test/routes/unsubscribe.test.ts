import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { unsubscribeUrl } from "../../src/services/tracking/links";
import { eventsOfEmail, getContact, insertSentEmail } from "../support/emails";
import { BASE, call, expectError, newProject } from "../support/http";
import type { Contact, ContactList, EventList, UpsertedContact } from "../support/api";

const SECRET = env.LINK_SIGNING_SECRET!;
const pathOf = async (emailId: string) => (await unsubscribeUrl(env.PUBLIC_URL!, SECRET, emailId)).slice(BASE.length);

const oneClick = (path: string, body: BodyInit = "List-Unsubscribe=One-Click", contentType = "application/x-www-form-urlencoded") =>
  call("POST", path, { rawBody: body, headers: contentType ? { "Content-Type": contentType } : {} });

describe("GET /unsubscribe/{token}", () => {
  it("shows a confirmation page with a button and changes nothing (link scanners open URLs)", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const path = await pathOf(email.id);
    expect(path.startsWith("/unsubscribe/")).toBe(true);

    for (let i = 0; i < 3; i++) {
      const res = await call("GET", path);
      expect(res.status).toBe(200);
      expect(res.headers.get("Content-Type")).toContain("text/html");
      expect(res.body).toContain(`<form method="post" action="${path}">`);
      expect(res.body).toContain('name="List-Unsubscribe" value="One-Click"');
      expect(res.body).toMatch(/<button type="submit">Unsubscribe<\/button>/);
    }
    expect((await p.api.get<Contact>(`/contacts/${email.contactId}`)).body.subscribed).toBe(true);
    expect(await eventsOfEmail(email.id)).toHaveLength(0);
  });

  it("the page's button (a form POST) unsubscribes, answers a page, and records contact.unsubscribed once", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const path = await pathOf(email.id);
    const page = await call("GET", path);
    // Submit the form exactly as the page's HTML defines it.
    const fields = [...String(page.body).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]+)">/g)];
    const form = new URLSearchParams(fields.map((m): [string, string] => [m[1], m[2]]));
    const action = /<form method="post" action="([^"]+)">/.exec(String(page.body))![1];
    const res = await oneClick(action, form.toString());
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toContain("text/html");
    expect(res.body).toContain("You are unsubscribed");
    expect((await p.api.get<Contact>(`/contacts/${email.contactId}`)).body.subscribed).toBe(false);
    await oneClick(action, form.toString());
    const events = await p.api.get<EventList>("/events?name=contact.unsubscribed");
    expect(events.body.data.items).toHaveLength(1);
    expect(events.body.data.items[0]).toMatchObject({ contactId: email.contactId, emailId: email.id, data: { method: "page" } });
  });

  it("answers 400 with an HTML page for a forged or malformed token, and changes nothing", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const valid = await pathOf(email.id);
    const other = await insertSentEmail(p);
    // Another email's id with this email's signature.
    for (const path of [valid.replace(email.id, other.id), `/unsubscribe/${email.id}`, `/unsubscribe/${email.id}.AAAA`, "/unsubscribe/x"]) {
      const res = await call("GET", path);
      expect(res.status, path).toBe(400);
      expect(res.headers.get("Content-Type")).toContain("text/html");
    }
    expect((await getContact(email.contactId!)).subscribed).toBe(true);
    expect((await getContact(other.contactId!)).subscribed).toBe(true);
    expect(await eventsOfEmail(email.id)).toHaveLength(0);
  });

  it("needs no API key, and a valid link to a deleted email is a 404 page", async () => {
    const path = await pathOf("0190f0a4-0000-7000-8000-000000000000");
    const res = await call("GET", path);
    expect(res.status).toBe(404);
    expect(res.headers.get("Content-Type")).toContain("text/html");
  });
});

describe("POST /unsubscribe/{token} (RFC 8058 one-click)", () => {
  it("unsubscribes with a urlencoded body, answers 200, and is idempotent", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const path = await pathOf(email.id);
    const res = await oneClick(path);
    expect(res.status).toBe(200);
    expect(String(res.body).length).toBeLessThan(100);
    expect((await p.api.get<Contact>(`/contacts/${email.contactId}`)).body.subscribed).toBe(false);

    expect((await oneClick(path)).status).toBe(200);
    expect((await call("GET", path)).status).toBe(200);
    const events = await p.api.get<EventList>("/events?name=contact.unsubscribed");
    expect(events.body.data.items).toHaveLength(1);
    expect(events.body.data.items[0]).toMatchObject({ contactId: email.contactId, emailId: email.id, data: { method: "one-click" } });
  });

  it("accepts multipart/form-data", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const form = new FormData();
    form.set("List-Unsubscribe", "One-Click");
    const res = await call("POST", await pathOf(email.id), { rawBody: form });
    expect(res.status).toBe(200);
    expect((await getContact(email.contactId!)).subscribed).toBe(false);
  });

  it("records a new event when a contact who subscribed again unsubscribes again", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const path = await pathOf(email.id);
    await oneClick(path);
    await p.api.patch(`/contacts/${email.contactId}`, { subscribed: true });
    await oneClick(path);
    expect((await getContact(email.contactId!)).subscribed).toBe(false);
    expect((await p.api.get<EventList>("/events?name=contact.unsubscribed")).body.data.items).toHaveLength(2);
  });

  it("refuses a forged token, a wrong body and a wrong content type with 400, changing nothing", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const path = await pathOf(email.id);
    expectError(await oneClick(`/unsubscribe/${email.id}.${"A".repeat(43)}`), 400, "BAD_REQUEST");
    expectError(await oneClick(path, "List-Unsubscribe=Nope"), 400, "BAD_REQUEST");
    expectError(await oneClick(path, ""), 400, "BAD_REQUEST");
    expectError(await oneClick(path, '{"List-Unsubscribe":"One-Click"}', "application/json"), 400, "UNSUPPORTED_MEDIA_TYPE");
    expectError(await oneClick(path, "List-Unsubscribe=One-Click", ""), 400);
    expectError(await oneClick(path, "--broken", "multipart/form-data; boundary=zzz"), 400);
    expect((await getContact(email.contactId!)).subscribed).toBe(true);
    expect(await eventsOfEmail(email.id)).toHaveLength(0);
  });

  it("a deleted contact's unsubscribe still suppresses the address for marketing mail", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p, { withContact: false });
    expect((await oneClick(await pathOf(email.id))).status).toBe(200);
    // The address is kept as an unsubscribed contact of the project, so marketing mail skips it...
    const list = await p.api.get<ContactList>(`/contacts?search=${encodeURIComponent(email.to)}`);
    expect(list.body.contacts).toHaveLength(1);
    expect(list.body.contacts[0]).toMatchObject({ email: email.to, subscribed: false });
    // ...and a later write that does not ask for a subscription does not undo it.
    await p.api.post("/v1/track", { email: email.to, event: "visited" });
    expect((await p.api.get<Contact>(`/contacts/${list.body.contacts[0].id}`)).body.subscribed).toBe(false);
    const events = await eventsOfEmail(email.id);
    expect(events.map((e) => [e.name, e.contactId])).toEqual([["contact.unsubscribed", list.body.contacts[0].id]]);
  });

  it("a contact deleted and created again is unsubscribed by an older email's link", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    expect((await p.api.delete(`/contacts/${email.contactId}`)).status).toBe(204);
    const again = await p.api.post<UpsertedContact>("/contacts", { email: email.to, subscribed: true });
    expect(again.status).toBe(201);
    expect((await oneClick(await pathOf(email.id))).status).toBe(200);
    expect((await p.api.get<Contact>(`/contacts/${again.body.id}`)).body.subscribed).toBe(false);
  });
});
