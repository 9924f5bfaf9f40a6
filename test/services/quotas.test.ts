import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env";
import { getDb } from "../../src/db/client";
import { applyFeedback } from "../../src/services/feedback/apply";
import { openPixelUrl, unsubscribeUrl } from "../../src/services/tracking/links";
import { getEmail, insertSentEmail } from "../support/emails";
import { BASE, call, expectError, newProject, type JsonResponse } from "../support/http";
import { sendingSetup } from "../support/sending";
import type { Contact, ContactList, EmailList, EventList } from "../support/api";

afterEach(() => {
  vi.restoreAllMocks();
});

/** A request through the Worker with some settings changed. */
const request = (key: string, method: string, path: string, body: unknown, settings: Partial<Env>): Promise<JsonResponse> =>
  call(method, path, { key, body, headers: { "Content-Type": "application/json" }, env: { ...env, ...settings } as Env });

describe("per-project quotas", () => {
  it("QUOTA_CONTACTS: a new contact past it is 403 QUOTA_EXCEEDED on /contacts and /v1/track; updates still pass", async () => {
    const p = await newProject();
    const other = await newProject();
    const limits = { QUOTA_CONTACTS: "2" };
    expect((await request(p.secretKey, "POST", "/contacts", { email: "a@example.com" }, limits)).status).toBe(201);
    expect((await request(p.secretKey, "POST", "/contacts", { email: "b@example.com" }, limits)).status).toBe(201);
    const err = expectError(await request(p.secretKey, "POST", "/contacts", { email: "c@example.com" }, limits), 403, "QUOTA_EXCEEDED");
    expect(err.message).toContain("2 contacts");
    expectError(await request(p.publicKey, "POST", "/v1/track", { email: "c@example.com", event: "visit" }, limits), 403, "QUOTA_EXCEEDED");
    expect((await request(p.secretKey, "POST", "/contacts", { email: "A@example.com", data: { plan: "pro" } }, limits)).status).toBe(200);
    expect((await request(p.publicKey, "POST", "/v1/track", { email: "b@example.com", event: "visit" }, limits)).status).toBe(200);
    expect((await p.api.get<ContactList>("/contacts")).body.total).toBe(2);
    // Another project has its own count.
    expect((await request(other.secretKey, "POST", "/contacts", { email: "c@example.com" }, limits)).status).toBe(201);
    // Deleting a contact frees its place (the count is kept by D1 triggers on insert and delete).
    const [first] = (await p.api.get<ContactList>("/contacts")).body.contacts;
    expect((await request(p.secretKey, "DELETE", `/contacts/${first.id}`, undefined, limits)).status).toBe(204);
    expect((await request(p.publicKey, "POST", "/v1/track", { email: "c@example.com", event: "visit" }, limits)).status).toBe(200);
    expectError(await request(p.secretKey, "POST", "/contacts", { email: "d@example.com" }, limits), 403, "QUOTA_EXCEEDED");
  });

  it("QUOTA_EVENTS_PER_DAY: /v1/track past it is 429 QUOTA_EXCEEDED with Retry-After until 00:00 UTC", async () => {
    const p = await newProject();
    const limits = { QUOTA_EVENTS_PER_DAY: "2" };
    for (let i = 0; i < 2; i++) {
      expect((await request(p.publicKey, "POST", "/v1/track", { email: "a@example.com", event: "visit" }, limits)).status).toBe(200);
    }
    const res = await request(p.publicKey, "POST", "/v1/track", { email: "a@example.com", event: "visit" }, limits);
    expectError(res, 429, "QUOTA_EXCEEDED");
    const retryAfter = Number(res.headers.get("Retry-After"));
    const now = new Date();
    const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
    expect(retryAfter).toBeGreaterThan(0);
    expect(Math.abs(retryAfter - (midnight - Date.now()) / 1000)).toBeLessThan(5);
    expect((await p.api.get<EventList>("/events")).body.data.total).toBe(2);
    // Refused as a whole (the check runs in the write's own batch): no new contact, no change to an existing one.
    expectError(await request(p.secretKey, "POST", "/v1/track", { email: "new@example.com", event: "visit" }, limits), 429, "QUOTA_EXCEEDED");
    expectError(
      await request(p.secretKey, "POST", "/v1/track", { email: "a@example.com", event: "visit", data: { plan: "pro" } }, limits),
      429,
      "QUOTA_EXCEEDED",
    );
    const contacts = (await p.api.get<ContactList>("/contacts")).body.contacts;
    expect(contacts.map((c: { email: string; data: unknown }) => [c.email, c.data])).toEqual([["a@example.com", {}]]);
    expect((await p.api.get<EventList>("/events")).body.data.total).toBe(2);
  });

  it("QUOTA_EMAILS_PER_DAY: a send that would pass it is 429, and nothing of it is stored or queued", async () => {
    const s = await sendingSetup({ QUOTA_EMAILS_PER_DAY: "3" });
    const message = (to: string[]) => ({ to, from: s.from, subject: "Hi", body: "<p>hi</p>" });
    expect((await s.send(message(["a@example.com", "b@example.com"]))).status).toBe(200);
    const refused = await s.send(message(["c@example.com", "d@example.com"]));
    expectError(refused as JsonResponse, 429, "QUOTA_EXCEEDED");
    expect(s.queue.messages).toHaveLength(2);
    expect((await s.get<EmailList>("/emails")).body.data.total).toBe(2);
    expect((await s.send(message(["c@example.com"]))).status).toBe(200);
  });

  it("QUOTA_STORED_BYTES: a send whose HTML and attachments would pass it is 403", async () => {
    const s = await sendingSetup({ QUOTA_STORED_BYTES: "6000" });
    const body = `<p>${"x".repeat(4000)}</p>`;
    expect((await s.send({ to: "a@example.com", from: s.from, subject: "Hi", body })).status).toBe(200);
    const err = expectError((await s.send({ to: "b@example.com", from: s.from, subject: "Hi", body })) as JsonResponse, 403, "QUOTA_EXCEEDED");
    expect(err.message).toContain("6000 bytes");
    expect(s.queue.messages).toHaveLength(1);
  });

  it("QUOTA_EVENTS_PER_DAY applies to the service's own events: past it an open, an unsubscribe and a complaint still count, their events are not stored", async () => {
    const p = await newProject();
    const limits = { QUOTA_EVENTS_PER_DAY: "2" } as Partial<Env>;
    const quotaEnv = { ...env, ...limits } as Env;
    const email = await insertSentEmail(p, { marketing: true });
    const other = await insertSentEmail(p, { marketing: true });
    for (let i = 0; i < 2; i++) {
      expect((await request(p.secretKey, "POST", "/v1/track", { email: "a@example.com", event: "visit" }, limits)).status).toBe(200);
    }
    const fetchWith = (path: string, init: { method?: string; body?: BodyInit; headers?: Record<string, string> } = {}) =>
      call(init.method ?? "GET", path, { rawBody: init.body, headers: init.headers, env: quotaEnv });
    const secret = env.LINK_SIGNING_SECRET!;
    // An open: counted on the email, no email.opened event.
    const pixel = new URL(await openPixelUrl(BASE, secret, email.id));
    expect((await fetchWith(pixel.pathname + pixel.search)).status).toBe(200);
    expect((await getEmail(email.id)).opens).toBe(1);
    // A one-click unsubscribe: the contact is unsubscribed, no contact.unsubscribed event.
    const unsubscribe = new URL(await unsubscribeUrl(BASE, secret, email.id));
    const form = new URLSearchParams({ "List-Unsubscribe": "One-Click" });
    const unsubscribed = await fetchWith(unsubscribe.pathname, {
      method: "POST",
      body: form,
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(unsubscribed.status).toBe(200);
    expect((await p.api.get<Contact>(`/contacts/${email.contactId}`)).body.subscribed).toBe(false);
    // A complaint: COMPLAINED and suppressed, no email.complained event.
    const outcome = await applyFeedback(
      getDb(env.DB),
      { kind: "complaint", providerMessageId: other.providerMessageId, feedbackId: "fb-1", data: {}, detail: "Complaint" },
      { QUOTA_EVENTS_PER_DAY: "2" },
    );
    expect(outcome).toBe("complained");
    expect((await getEmail(other.id)).status).toBe("COMPLAINED");
    expect((await p.api.get<EventList>("/events")).body.data.total).toBe(2);
    // Another project has its own count: its open is stored.
    const q = await newProject();
    const theirs = await insertSentEmail(q);
    const theirPixel = new URL(await openPixelUrl(BASE, secret, theirs.id));
    expect((await fetchWith(theirPixel.pathname + theirPixel.search)).status).toBe(200);
    expect((await q.api.get<EventList>("/events")).body.data.total).toBe(1);
  });
});

describe("public-key quotas", () => {
  it("a pk_ has its own daily quotas of new contacts and events (429 past them); secret-key /v1/track and /v1/send still work", async () => {
    const limits = { QUOTA_PUBLIC_CONTACTS_PER_DAY: "2", QUOTA_PUBLIC_EVENTS_PER_DAY: "3" } as Partial<Env>;
    const s = await sendingSetup(limits);
    const pk = (email: string) => request(s.project.publicKey, "POST", "/v1/track", { email, event: "visit" }, limits);
    expect((await pk("a@example.com")).status).toBe(200);
    expect((await pk("b@example.com")).status).toBe(200);
    const contacts = expectError(await pk("c@example.com"), 429, "QUOTA_EXCEEDED");
    expect(contacts.message).toContain("2 new contacts per day through a public key");
    // An existing contact costs no new-contact quota; the events quota still counts.
    expect((await pk("a@example.com")).status).toBe(200);
    const events = expectError(await pk("b@example.com"), 429, "QUOTA_EXCEEDED");
    expect(events.message).toContain("3 events per day through a public key");
    expect((await s.project.api.get<EventList>("/events")).body.data.total).toBe(3);
    // The secret key is not blocked: new contacts, events and mail.
    const tracked = await request(s.project.secretKey, "POST", "/v1/track", { email: "c@example.com", event: "paid" }, limits);
    expect(tracked.status, JSON.stringify(tracked.body)).toBe(200);
    const sent = await s.send({ to: "d@example.com", subject: "Reset", body: "<p>r</p>", from: s.from });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  });
});
