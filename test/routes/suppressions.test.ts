import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { suppressions } from "../../src/db/schema";
import type { Env } from "../../src/env";
import { FIXED_SQL } from "../../src/store/suppressions";
import { call, expectError, newProject, type TestProject } from "../support/http";
import type { ContactList, EventList, List, UpsertedContact, WebhookWithSecret } from "../support/api";
import { receiver, recordedEvents } from "../support/webhooks";
import { eventually } from "../support/wait";

interface Suppression {
  email: string;
  reason: "BOUNCE" | "COMPLAINT" | "UNSUBSCRIBE" | "MANUAL";
  stream: "ALL" | "BROADCAST";
  note: string | null;
  createdAt: string;
}
type SuppressionList = List<Suppression>;

const list = (p: TestProject, query = "") => p.api.get<SuppressionList>(`/suppressions${query}`);
const add = (p: TestProject, body: unknown) => p.api.post<{ added: number }>("/suppressions", body);

/** Every page of a list, following nextCursor. */
async function walk(p: TestProject, query: string) {
  const seen: Suppression[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 50; i++) {
    const res = await list(p, `${query}${query ? "&" : "?"}${cursor ? `cursor=${encodeURIComponent(cursor)}` : ""}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    seen.push(...res.body.data.items);
    cursor = res.body.data.nextCursor;
    expect(res.body.data.hasMore).toBe(cursor !== null);
    if (!cursor) return seen;
  }
  throw new Error("the list did not end");
}

describe("GET /suppressions", () => {
  it("the general list: newest first, reason and email (a prefix) filters, the cursor walks every entry once, total under the filter", async () => {
    const p = await newProject();
    const db = getDb(env.DB);
    const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, i));
    await db.insert(suppressions).values([
      { projectId: p.id, email: "b1@example.com", reason: "BOUNCE", detail: "550 user unknown", createdAt: at(1) },
      { projectId: p.id, email: "c1@example.com", reason: "COMPLAINT", createdAt: at(2) },
      // Two entries at the same instant: the address orders them.
      { projectId: p.id, email: "b2@example.com", reason: "BOUNCE", createdAt: at(3) },
      { projectId: p.id, email: "b3@example.com", reason: "BOUNCE", createdAt: at(3) },
    ]);
    expect((await add(p, { emails: ["m1@example.com", "M2@Example.com"], note: "asked by phone" })).body).toEqual({ added: 2 });

    const all = await list(p);
    expect(all.status).toBe(200);
    expect(all.body.success).toBe(true);
    expect(all.body.data.total).toBe(6);
    expect(all.body.data.items.map((i) => i.email)).toEqual([
      "m2@example.com",
      "m1@example.com",
      "b3@example.com",
      "b2@example.com",
      "c1@example.com",
      "b1@example.com",
    ]);
    expect(all.body.data.items[0]).toEqual({ email: "m2@example.com", reason: "MANUAL", stream: "ALL", note: "asked by phone", createdAt: expect.any(String) });
    expect(all.body.data.items.at(-1)).toMatchObject({ reason: "BOUNCE", stream: "ALL", note: "550 user unknown", createdAt: at(1).toISOString() });

    const paged = await walk(p, "?limit=2");
    expect(paged.map((i) => i.email)).toEqual(all.body.data.items.map((i) => i.email));

    const bounces = await list(p, "?reason=BOUNCE&limit=2");
    expect(bounces.body.data).toMatchObject({ total: 3, hasMore: true });
    expect((await walk(p, "?reason=BOUNCE&limit=2")).map((i) => i.email)).toEqual(["b3@example.com", "b2@example.com", "b1@example.com"]);
    expect((await list(p, "?email=B")).body.data.items.map((i) => i.email)).toEqual(["b3@example.com", "b2@example.com", "b1@example.com"]);
    expect((await list(p, "?email=c1@example.com")).body.data).toMatchObject({ total: 1, items: [{ email: "c1@example.com", reason: "COMPLAINT" }] });
    expect((await list(p, "?email=nobody")).body.data).toEqual({ items: [], nextCursor: null, hasMore: false, total: 0 });

    expectError(await list(p, "?reason=SPAM"), 422, "VALIDATION_ERROR");
    expectError(await list(p, "?cursor=not-a-cursor"), 422, "VALIDATION_ERROR");
  });

  it("another project's suppressions are invisible: not listed, not removable (404), not counted", async () => {
    const mine = await newProject();
    const theirs = await newProject();
    await add(theirs, { emails: ["secret@example.com"] });
    expect((await list(mine)).body.data).toMatchObject({ items: [], total: 0 });
    expectError(await mine.api.delete("/suppressions/secret@example.com"), 404, "NOT_FOUND");
    expect((await add(mine, { emails: ["secret@example.com"] })).body).toEqual({ added: 1 });
    expect((await list(theirs)).body.data.total).toBe(1);
    expect((await list(mine)).body.data.total).toBe(1);
  });

  it("needs a secret key", async () => {
    const p = await newProject();
    expectError(await p.publicApi.get("/suppressions"), 403);
    expectError(await call("GET", "/suppressions"), 401);
  });
});

describe("POST /suppressions", () => {
  it("adds up to 1000 addresses in one batch of fixed statements (not one per address), MANUAL for every stream; repeats add nothing", async () => {
    const p = await newProject();
    const emails = Array.from({ length: 1000 }, (_, i) => `user${i}@example.com`);
    // One statement for the whole list: the addresses travel as one JSON parameter.
    expect(FIXED_SQL.INSERT_MANUAL_SQL).toContain("json_each(?2)");
    const res = await add(p, { emails, note: "import from the old tool" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ added: 1000 });
    expect((await list(p, "?limit=1")).body.data.total).toBe(1000);
    // Again, with one new address and a repeat in the request: only the new one is added.
    expect((await add(p, { emails: ["user0@example.com", "new@example.com", "NEW@example.com"] })).body).toEqual({ added: 1 });
    expect((await list(p, "?limit=1")).body.data.total).toBe(1001);
  });

  it("an unsubscribe (broadcast only) becomes MANUAL (every stream); a bounce keeps its reason", async () => {
    const p = await newProject();
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "left@example.com", subscribed: true });
    expect((await p.api.patch(`/contacts/${created.body.id}`, { subscribed: false })).status).toBe(200);
    await getDb(env.DB).insert(suppressions).values({ projectId: p.id, email: "bounced@example.com", reason: "BOUNCE" });
    expect((await list(p, "?email=left@")).body.data.items).toEqual([expect.objectContaining({ reason: "UNSUBSCRIBE", stream: "BROADCAST", note: null })]);
    expect((await add(p, { emails: ["left@example.com", "bounced@example.com"], note: "legal" })).body).toEqual({ added: 1 });
    expect((await list(p, "?email=left@")).body.data.items).toEqual([expect.objectContaining({ reason: "MANUAL", stream: "ALL", note: "legal" })]);
    expect((await list(p, "?email=bounced@")).body.data.items).toEqual([expect.objectContaining({ reason: "BOUNCE", stream: "ALL" })]);
    // Subscribing again takes an UNSUBSCRIBE entry off, never a MANUAL one.
    expect((await p.api.patch(`/contacts/${created.body.id}`, { subscribed: true })).status).toBe(200);
    expect((await list(p, "?email=left@")).body.data.items).toHaveLength(1);
  });

  it("an unsubscribe lists the address as UNSUBSCRIBE (broadcast); subscribing again removes it; a contact created unsubscribed adds none", async () => {
    const p = await newProject();
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "ada@example.com", subscribed: true });
    await p.api.post("/contacts", { email: "pending@example.com", subscribed: false });
    expect((await list(p)).body.data.total).toBe(0);
    expect((await p.api.patch(`/contacts/${created.body.id}`, { subscribed: false })).status).toBe(200);
    expect((await list(p)).body.data.items).toEqual([expect.objectContaining({ email: "ada@example.com", reason: "UNSUBSCRIBE", stream: "BROADCAST" })]);
    expect((await p.api.patch(`/contacts/${created.body.id}`, { subscribed: true })).status).toBe(200);
    expect((await list(p)).body.data.total).toBe(0);
    // Deleted and created again subscribed: no entry left behind.
    expect((await p.api.patch(`/contacts/${created.body.id}`, { subscribed: false })).status).toBe(200);
    expect((await p.api.delete(`/contacts/${created.body.id}`)).status).toBe(204);
    expect((await list(p)).body.data.total).toBe(1);
    await p.api.post("/contacts", { email: "ada@example.com", subscribed: true });
    expect((await list(p)).body.data.total).toBe(0);
  });

  it("bad input is a 422 naming the field: no addresses, more than 1000, an invalid address, a long note", async () => {
    const p = await newProject();
    for (const [body, field] of [
      [{}, "emails"],
      [{ emails: [] }, "emails"],
      [{ emails: Array.from({ length: 1001 }, (_, i) => `u${i}@example.com`) }, "emails"],
      [{ emails: ["not an address"] }, "emails.0"],
      [{ emails: ["a@example.com"], note: "x".repeat(501) }, "note"],
    ] as const) {
      const error = expectError(await add(p, body), 422, "VALIDATION_ERROR");
      expect(error.errors?.map((e) => e.field)).toContain(field);
    }
    expect((await list(p)).body.data.total).toBe(0);
  });

  it("QUOTA_SUPPRESSIONS: a request that would pass it adds nothing (403 QUOTA_EXCEEDED)", async () => {
    const p = await newProject();
    const limited = { ...env, QUOTA_SUPPRESSIONS: "3" } as Env;
    const post = (emails: string[]) => call<{ added: number }>("POST", "/suppressions", { key: p.secretKey, body: { emails }, env: limited });
    expect((await post(["a@example.com", "b@example.com"])).body).toEqual({ added: 2 });
    expectError(await post(["c@example.com", "d@example.com"]), 403, "QUOTA_EXCEEDED");
    expect((await list(p)).body.data.total).toBe(2);
    // Addresses already on the list cost nothing.
    expect((await post(["a@example.com", "c@example.com"])).body).toEqual({ added: 1 });
  });
});

describe("DELETE /suppressions/{email}", () => {
  it("204 and gone, case-insensitive; 404 when absent", async () => {
    const p = await newProject();
    await add(p, { emails: ["ada@example.com"] });
    expect((await p.api.delete("/suppressions/ADA%40example.com")).status).toBe(204);
    expect((await list(p)).body.data.total).toBe(0);
    expectError(await p.api.delete("/suppressions/ada@example.com"), 404, "NOT_FOUND");
  });
});

describe("suppression.created and suppression.deleted", () => {
  it("fire as webhooks for the addresses added and removed (not for repeats), and as events on the contacts", async () => {
    const hooks = receiver();
    const received = () =>
      hooks.calls
        .filter((c) => c.url === "https://hooks.example.net/suppressions")
        .map((c) => JSON.parse(c.body) as { type: string; data: Record<string, unknown> });
    const p = await newProject();
    const hook = await p.api.post<WebhookWithSecret>("/webhooks", {
      url: "https://hooks.example.net/suppressions",
      events: ["suppression.created", "suppression.deleted"],
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    await p.api.post("/contacts", { email: "ada@example.com" });

    await add(p, { emails: ["ada@example.com", "bob@example.com"], note: "asked" });
    await add(p, { emails: ["ada@example.com"] });
    expect((await p.api.delete("/suppressions/bob@example.com")).status).toBe(204);

    expect(await recordedEvents(p.id, ["suppression.created", "suppression.deleted"])).toEqual([
      "suppression.created",
      "suppression.created",
      "suppression.deleted",
    ]);
    await eventually(async () => expect(received()).toHaveLength(3));
    const summary = received().map((r) => [r.type, r.data.email, r.data.reason, r.data.stream, r.data.note]);
    expect(summary).toEqual(
      expect.arrayContaining([
        ["suppression.created", "ada@example.com", "MANUAL", "ALL", "asked"],
        ["suppression.created", "bob@example.com", "MANUAL", "ALL", "asked"],
        ["suppression.deleted", "bob@example.com", "MANUAL", "ALL", "asked"],
      ]),
    );
    // Events: only on the address that is a contact.
    const [ada] = (await p.api.get<ContactList>("/contacts?search=ada@example.com")).body.contacts;
    const events = await p.api.get<EventList>(`/events?contactId=${ada.id}&name=suppression.created`);
    expect(events.body.data.items).toEqual([
      expect.objectContaining({ name: "suppression.created", data: { email: "ada@example.com", reason: "MANUAL", stream: "ALL", note: "asked" } }),
    ]);
    expect((await p.api.get<EventList>("/events?name=suppression.deleted")).body.data.total).toBe(0);
  }, 60_000);
});
