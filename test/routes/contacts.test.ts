import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { upsertContacts } from "../../src/store/contacts";
import { expectError, newProject, type TestProject } from "../support/http";
import type { z } from "@hono/zod-openapi";
import type { ContactListResponseSchema, ContactSchema, UpsertedContactSchema } from "../../src/schemas/contacts";

type ContactList = z.infer<typeof ContactListResponseSchema>;
type Contact = z.infer<typeof ContactSchema>;
type UpsertedContact = z.infer<typeof UpsertedContactSchema>;

/** Inserts contacts straight through the service, in D1 batches (fast seeding). */
async function seedContacts(projectId: string, emails: string[], subscribed = true) {
  const { statements } = upsertContacts(
    env.DB,
    projectId,
    emails.map((email) => ({ email, subscribed })),
    { onExisting: "merge", subscribedByDefault: true },
  );
  await env.DB.batch(statements);
}

/** Follows cursors to the end; returns every page's contacts in order. */
async function listAll(p: TestProject, query = "") {
  const seen: Contact[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const qs: string = query + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : "");
    const res = await p.api.get<ContactList>(`/contacts?limit=100${qs}`);
    expect(res.status).toBe(200);
    seen.push(...res.body.contacts);
    cursor = res.body.cursor;
    if (!cursor) return seen;
  }
  throw new Error("pagination did not end");
}

describe("POST /contacts", () => {
  it("creates a contact (201), then updates it by email case-insensitively (200)", async () => {
    const p = await newProject();
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "Ada@Example.com", data: { plan: "free", city: "London" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      email: "ada@example.com",
      subscribed: true,
      data: { plan: "free", city: "London" },
      _meta: { isNew: true, isUpdate: false },
    });
    expect(Date.parse(created.body.createdAt)).not.toBeNaN();
    const updated = await p.api.post<UpsertedContact>("/contacts", { email: "ADA@example.com", data: { plan: "pro", city: null } });
    expect(updated.status).toBe(200);
    expect(updated.body.id).toBe(created.body.id);
    expect(updated.body.data).toEqual({ plan: "pro" });
    expect(updated.body._meta).toEqual({ isNew: false, isUpdate: true });
    const list = await p.api.get<ContactList>("/contacts");
    expect(list.body.total).toBe(1);
  });

  it("merges data (nested objects too), keeps keys not mentioned, and keeps subscribed unless given", async () => {
    const p = await newProject();
    await p.api.post<UpsertedContact>("/contacts", { email: "m@example.com", subscribed: false, data: { a: 1, b: { x: 1, y: 2 }, c: "keep" } });
    const res = await p.api.post<UpsertedContact>("/contacts", { email: "m@example.com", data: { a: 2, b: { y: null, z: 3 } } });
    expect(res.status).toBe(200);
    expect(res.body.subscribed).toBe(false);
    expect(res.body.data).toEqual({ a: 2, b: { x: 1, z: 3 }, c: "keep" });
    const resub = await p.api.post<UpsertedContact>("/contacts", { email: "m@example.com", subscribed: true });
    expect(resub.body.subscribed).toBe(true);
    expect(resub.body.data).toEqual({ a: 2, b: { x: 1, z: 3 }, c: "keep" });
  });

  it("a new contact with a null data value does not store the key", async () => {
    const p = await newProject();
    const res = await p.api.post<UpsertedContact>("/contacts", { email: "n@example.com", data: { gone: null, kept: "yes" } });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({ kept: "yes" });
  });

  it("rejects a bad email and a missing email with 422, one error per field", async () => {
    const p = await newProject();
    const bad = expectError(await p.api.post<UpsertedContact>("/contacts", { email: "not-an-email", subscribed: "yes" }), 422, "VALIDATION_ERROR");
    expect(bad.errors!.map((e) => e.field).sort()).toEqual(["email", "subscribed"]);
    const missing = expectError(await p.api.post<UpsertedContact>("/contacts", {}), 422, "VALIDATION_ERROR");
    expect(missing.errors!.map((e) => e.field)).toEqual(["email"]);
    expect((await p.api.get<ContactList>("/contacts")).body.total).toBe(0);
  });
});

describe("GET/PATCH/DELETE /contacts/{id}", () => {
  it("gets one contact without _meta", async () => {
    const p = await newProject();
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "g@example.com", data: { k: "v" } });
    const res = await p.api.get<Contact>(`/contacts/${created.body.id}`);
    expect(res.status).toBe(200);
    const { _meta, ...view } = created.body;
    expect(res.body).toEqual(view);
    expectError(await p.api.get("/contacts/does-not-exist"), 404, "NOT_FOUND");
  });

  it("PATCH changes subscribed and merges data with null deleting keys", async () => {
    const p = await newProject();
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "p@example.com", data: { a: 1, b: 2 } });
    const id = created.body.id;
    const unsub = await p.api.patch<Contact>(`/contacts/${id}`, { subscribed: false });
    expect(unsub.status).toBe(200);
    expect(unsub.body).toMatchObject({ id, subscribed: false, data: { a: 1, b: 2 } });
    const merged = await p.api.patch<Contact>(`/contacts/${id}`, { data: { b: null, c: [1, 2] } });
    expect(merged.body.data).toEqual({ a: 1, c: [1, 2] });
    expect(merged.body.subscribed).toBe(false);
    expect(Date.parse(merged.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.updatedAt));
    const fetched = await p.api.get<Contact>(`/contacts/${id}`);
    expect(fetched.body).toMatchObject({ subscribed: false, data: { a: 1, c: [1, 2] } });
    expectError(await p.api.patch<Contact>(`/contacts/${id}`, { subscribed: "no" }), 422, "VALIDATION_ERROR");
    expectError(await p.api.patch("/contacts/nope", { subscribed: true }), 404, "NOT_FOUND");
  });

  it("DELETE answers 204 with an empty body, then 404", async () => {
    const p = await newProject();
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "d@example.com" });
    const del = await p.api.delete(`/contacts/${created.body.id}`);
    expect(del.status).toBe(204);
    expect(del.body).toBeNull();
    expectError(await p.api.get<Contact>(`/contacts/${created.body.id}`), 404, "NOT_FOUND");
    expectError(await p.api.delete(`/contacts/${created.body.id}`), 404, "NOT_FOUND");
    expect((await p.api.get<ContactList>("/contacts")).body.total).toBe(0);
    // The address can be added again as a new contact.
    expect((await p.api.post<UpsertedContact>("/contacts", { email: "d@example.com" })).status).toBe(201);
  });
});

describe("GET /contacts", () => {
  it("filters by subscribed and by email substring, with total counting the filtered rows", async () => {
    const p = await newProject();
    await seedContacts(p.id, ["alice@one.test", "bob@one.test", "carol@two.test"]);
    await seedContacts(p.id, ["dave@two.test", "erin@three.test"], false);
    const all = await p.api.get<ContactList>("/contacts");
    expect(all.body.total).toBe(5);
    expect(all.body.hasMore).toBe(false);
    expect(all.body.cursor).toBeNull();
    const subscribed = await p.api.get<ContactList>("/contacts?subscribed=true");
    expect(subscribed.body.total).toBe(3);
    expect(subscribed.body.contacts.every((c) => c.subscribed)).toBe(true);
    const unsubscribed = await p.api.get<ContactList>("/contacts?subscribed=false");
    expect(unsubscribed.body.contacts.map((c) => c.email).sort()).toEqual(["dave@two.test", "erin@three.test"]);
    expect(unsubscribed.body.total).toBe(2);
    const search = await p.api.get<ContactList>("/contacts?search=TWO.test");
    expect(search.body.contacts.map((c) => c.email).sort()).toEqual(["carol@two.test", "dave@two.test"]);
    expect(search.body.total).toBe(2);
    const both = await p.api.get<ContactList>("/contacts?search=two&subscribed=false");
    expect(both.body.contacts.map((c) => c.email)).toEqual(["dave@two.test"]);
    expectError(await p.api.get<ContactList>("/contacts?subscribed=maybe"), 422, "VALIDATION_ERROR");
  });

  it("treats % and _ in search literally", async () => {
    const p = await newProject();
    await seedContacts(p.id, ["a_b@x.test", "axb@x.test", "per%cent@x.test", "percent@x.test"]);
    const underscore = await p.api.get<ContactList>(`/contacts?search=${encodeURIComponent("a_b")}`);
    expect(underscore.body.contacts.map((c) => c.email)).toEqual(["a_b@x.test"]);
    const percent = await p.api.get<ContactList>(`/contacts?search=${encodeURIComponent("%")}`);
    expect(percent.body.contacts.map((c) => c.email)).toEqual(["per%cent@x.test"]);
    expect(percent.body.total).toBe(1);
    const backslash = await p.api.get<ContactList>(`/contacts?search=${encodeURIComponent("\\")}`);
    expect(backslash.status).toBe(200);
    expect(backslash.body.total).toBe(0);
  });

  it("enforces limit 1..100 and rejects a malformed cursor with 422", async () => {
    const p = await newProject();
    await seedContacts(p.id, ["l1@x.test", "l2@x.test", "l3@x.test"]);
    for (const bad of ["0", "101", "abc", "-1", "1.5"]) {
      const err = expectError(await p.api.get<ContactList>(`/contacts?limit=${bad}`), 422, "VALIDATION_ERROR");
      expect(err.errors!.map((e) => e.field)).toEqual(["limit"]);
    }
    const one = await p.api.get<ContactList>("/contacts?limit=1");
    expect(one.body.contacts).toHaveLength(1);
    expect(one.body.hasMore).toBe(true);
    expect(one.body.total).toBe(3);
    expect(typeof one.body.cursor).toBe("string");
    expect((await p.api.get<ContactList>("/contacts?limit=100")).body.contacts).toHaveLength(3);
    for (const cursor of ["garbage!!", btoa("not json"), btoa(JSON.stringify({ k: 5 })), btoa(JSON.stringify({}))]) {
      const err = expectError(await p.api.get<ContactList>(`/contacts?cursor=${encodeURIComponent(cursor)}`), 422, "VALIDATION_ERROR");
      expect(err.errors![0].field).toBe("cursor");
    }
  });

  it("pages through 250 contacts exactly once each while contacts are added between pages", async () => {
    const p = await newProject();
    const originals = Array.from({ length: 250 }, (_, i) => `seed${i}@page.test`);
    await seedContacts(p.id, originals);
    const first = await p.api.get<ContactList>("/contacts?limit=1");
    expect(first.body.total).toBe(250);

    const counts = new Map<string, number>();
    const emailsSeen = new Map<string, number>();
    let cursor: string | null = null;
    let pages = 0;
    let added = 0;
    do {
      const qs: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
      // Contacts created concurrently with the page read and between pages.
      const inserts = Array.from({ length: 3 }, () => p.api.post<UpsertedContact>("/contacts", { email: `late${added++}@page.test` }));
      const [page, ...created] = await Promise.all([p.api.get<ContactList>(`/contacts?limit=37${qs}`), ...inserts]);
      for (const c of created) expect(c.status).toBe(201);
      expect(page.status).toBe(200);
      expect(page.body.contacts.length).toBeLessThanOrEqual(37);
      for (const c of page.body.contacts) {
        counts.set(c.id, (counts.get(c.id) ?? 0) + 1);
        emailsSeen.set(c.email, (emailsSeen.get(c.email) ?? 0) + 1);
      }
      cursor = page.body.cursor;
      expect(page.body.hasMore).toBe(cursor !== null);
      pages++;
    } while (cursor && pages < 50);

    expect(cursor).toBeNull();
    for (const email of originals) expect(emailsSeen.get(email), email).toBe(1);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(pages).toBeGreaterThanOrEqual(7);
    const after = await p.api.get<ContactList>("/contacts?limit=1");
    expect(after.body.total).toBe(250 + added);
  });
});

describe("cross-project isolation", () => {
  it("project B cannot read, change or delete project A's contacts and never sees them in lists", async () => {
    const a = await newProject("A");
    const b = await newProject("B");
    const contact = await a.api.post<UpsertedContact>("/contacts", { email: "shared@example.com", data: { owner: "A" } });
    await a.api.post<UpsertedContact>("/contacts", { email: "only-a@example.com" });
    const id = contact.body.id;

    expectError(await b.api.get<Contact>(`/contacts/${id}`), 404, "NOT_FOUND");
    expectError(await b.api.patch<Contact>(`/contacts/${id}`, { subscribed: false, data: { owner: "B" } }), 404, "NOT_FOUND");
    expectError(await b.api.delete(`/contacts/${id}`), 404, "NOT_FOUND");

    const bList = await b.api.get<ContactList>("/contacts?search=example.com");
    expect(bList.body.total).toBe(0);
    expect(bList.body.contacts).toEqual([]);

    // Same address in B: a separate contact with its own data.
    const bContact = await b.api.post<UpsertedContact>("/contacts", { email: "SHARED@example.com", data: { owner: "B" } });
    expect(bContact.status).toBe(201);
    expect(bContact.body.id).not.toBe(id);
    expect(bContact.body.data).toEqual({ owner: "B" });
    expect((await b.api.get<ContactList>("/contacts")).body.total).toBe(1);
    const bAll = await listAll(b);
    expect(bAll.map((c) => c.id)).toEqual([bContact.body.id]);

    // A's contact is untouched.
    const aContact = await a.api.get<Contact>(`/contacts/${id}`);
    expect(aContact.body).toMatchObject({ subscribed: true, data: { owner: "A" } });
    expect((await a.api.get<ContactList>("/contacts")).body.total).toBe(2);
    // B's key cannot page with A's cursor to reach A's rows either.
    const aPage = await a.api.get<ContactList>("/contacts?limit=1");
    const viaCursor = await b.api.get<ContactList>(`/contacts?cursor=${encodeURIComponent(aPage.body.cursor!)}`);
    expect(viaCursor.body.contacts.map((c) => c.id)).not.toContain(id);
  });
});
