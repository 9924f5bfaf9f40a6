import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { unsubscribeUrl } from "../../src/services/tracking/links";
import { eventsOfEmail, getContact, insertSentEmail } from "../fixtures/emails";
import { BASE, call, expectError, newProject } from "../helpers";

const SECRET = env.LINK_SIGNING_SECRET!;
const pathOf = async (emailId: string) => (await unsubscribeUrl(env.PUBLIC_URL!, SECRET, emailId)).slice(BASE.length);

const oneClick = (path: string, body: BodyInit = "List-Unsubscribe=One-Click", contentType = "application/x-www-form-urlencoded") =>
  call("POST", path, { rawBody: body, headers: contentType ? { "Content-Type": contentType } : {} });

describe("GET /unsubscribe/{token}", () => {
  it("unsubscribes the contact, shows a plain page, and records contact.unsubscribed once", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const path = await pathOf(email.id);
    expect(path.startsWith("/unsubscribe/")).toBe(true);

    const res = await call("GET", path);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toContain("text/html");
    expect(res.body).toContain("unsubscribed");
    expect((await p.api.get(`/contacts/${email.contactId}`)).body.subscribed).toBe(false);

    expect((await call("GET", path)).status).toBe(200);
    const events = await p.api.get("/events?name=contact.unsubscribed");
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
    expect((await p.api.get(`/contacts/${email.contactId}`)).body.subscribed).toBe(false);

    expect((await oneClick(path)).status).toBe(200);
    expect((await call("GET", path)).status).toBe(200);
    const events = await p.api.get("/events?name=contact.unsubscribed");
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
    expect((await p.api.get("/events?name=contact.unsubscribed")).body.data.items).toHaveLength(2);
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

  it("an email without a contact (contact deleted) answers 200 and records nothing", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p, { withContact: false });
    expect((await oneClick(await pathOf(email.id))).status).toBe(200);
    expect(await eventsOfEmail(email.id)).toHaveLength(0);
  });
});
