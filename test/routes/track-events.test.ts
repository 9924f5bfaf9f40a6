import { describe, expect, it } from "vitest";
import { call, expectError, newProject } from "../support/http";
import type { Contact, ContactList, EventList, EventNames, TrackResponse, UpsertedContact } from "../support/api";

async function contactByEmail(p: Awaited<ReturnType<typeof newProject>>, email: string) {
  const res = await p.api.get<ContactList>(`/contacts?search=${encodeURIComponent(email)}`);
  return res.body.contacts.find((c) => c.email === email);
}

describe("POST /v1/track", () => {
  it("with a public key creates a subscribed contact and records the event", async () => {
    const p = await newProject();
    const before = Date.now();
    const res = await p.publicApi.post<TrackResponse>("/v1/track", { email: "Ada@Example.com", event: "signed-up", data: { plan: "pro" } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { contact: expect.any(String), event: expect.any(String), timestamp: expect.any(String) },
    });
    expect(Date.parse(res.body.data.timestamp)).toBeGreaterThanOrEqual(before - 1000);

    // A public key never writes contact data: the event keeps it.
    const contact = await p.api.get<Contact>(`/contacts/${res.body.data.contact}`);
    expect(contact.body).toMatchObject({ email: "ada@example.com", subscribed: true });
    expect(contact.body.data).toEqual({});

    const events = await p.api.get<EventList>("/events");
    expect(events.body.data.items).toEqual([
      {
        id: res.body.data.event,
        name: "signed-up",
        contactId: res.body.data.contact,
        email: "ada@example.com",
        data: { plan: "pro" },
        emailId: null,
        source: "public",
        createdAt: res.body.data.timestamp,
      },
    ]);
  });

  it("caps a public key's event data at 2 KB as JSON (422 naming data, nothing stored); events say which kind of key sent them", async () => {
    const p = await newProject();
    const big = { note: "x".repeat(2100) };
    const refused = expectError(await p.publicApi.post("/v1/track", { email: "ada@example.com", event: "viewed", data: big }), 422, "VALIDATION_ERROR");
    expect(refused.errors!.map((e) => e.field)).toEqual(["data"]);
    expect((await p.api.get<EventList>("/events")).body.data.total).toBe(0);
    expect(await contactByEmail(p, "ada@example.com")).toBeUndefined();
    // Just under the cap passes; a secret key keeps the larger contact-data limit.
    const fits = await p.publicApi.post("/v1/track", { email: "ada@example.com", event: "viewed", data: { note: "x".repeat(2000) } });
    expect(fits.status, JSON.stringify(fits.body)).toBe(200);
    const server = await p.api.post("/v1/track", { email: "ada@example.com", event: "paid", data: big });
    expect(server.status, JSON.stringify(server.body)).toBe(200);
    const items = (await p.api.get<EventList>("/events")).body.data.items;
    expect(items.map((e) => [e.name, e.source])).toEqual([
      ["paid", "secret"],
      ["viewed", "public"],
    ]);
  });

  it("also works with a secret key", async () => {
    const p = await newProject();
    const res = await p.api.post<TrackResponse>("/v1/track", { email: "ada@example.com", event: "login" });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
  });

  it("with a secret key updates an existing contact: same id, data merged (null removes a key), subscription kept", async () => {
    const p = await newProject();
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "ada@example.com", subscribed: false, data: { plan: "free", city: "London" } });
    const res = await p.api.post<TrackResponse>("/v1/track", {
      email: "ADA@example.com",
      event: "upgraded",
      data: { plan: "pro", city: null, seats: 3 },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.contact).toBe(created.body.id);
    const contact = await p.api.get<Contact>(`/contacts/${created.body.id}`);
    expect(contact.body.subscribed).toBe(false);
    expect(contact.body.data).toEqual({ plan: "pro", seats: 3 });
    // The event keeps the data as it was sent.
    const events = await p.api.get<EventList>("/events");
    expect(events.body.data.items[0].data).toEqual({ plan: "pro", city: null, seats: 3 });
  });

  it("subscribed:false creates an unsubscribed contact; only a secret key resubscribes an existing one", async () => {
    const p = await newProject();
    const first = await p.publicApi.post<TrackResponse>("/v1/track", { email: "bob@example.com", event: "visited", subscribed: false });
    expect(first.status).toBe(200);
    expect((await p.api.get<Contact>(`/contacts/${first.body.data.contact}`)).body.subscribed).toBe(false);
    await p.publicApi.post("/v1/track", { email: "bob@example.com", event: "visited" });
    expect((await p.api.get<Contact>(`/contacts/${first.body.data.contact}`)).body.subscribed).toBe(false);
    await p.publicApi.post("/v1/track", { email: "bob@example.com", event: "opted-in", subscribed: true });
    expect((await p.api.get<Contact>(`/contacts/${first.body.data.contact}`)).body.subscribed).toBe(false);
    await p.api.post("/v1/track", { email: "bob@example.com", event: "opted-in", subscribed: true });
    expect((await p.api.get<Contact>(`/contacts/${first.body.data.contact}`)).body.subscribed).toBe(true);
  });

  it("with a public key leaves an existing contact exactly as it was (no unsubscribe, no data), and the event keeps its data", async () => {
    const p = await newProject();
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "ada@example.com", data: { plan: "free" } });
    const before = (await p.api.get<Contact>(`/contacts/${created.body.id}`)).body;
    const res = await p.publicApi.post<TrackResponse>("/v1/track", {
      email: "ada@example.com",
      event: "hostile",
      subscribed: false,
      data: { plan: null, link: "[click](https://evil.example)" },
    });
    expect(res.status).toBe(200);
    // The public key is answered the event's id, never the existing contact's.
    expect(res.body.data.contact).toBe(res.body.data.event);
    expect(res.body.data.contact).not.toBe(created.body.id);
    expect((await p.api.get<Contact>(`/contacts/${created.body.id}`)).body).toEqual(before);
    const events = await p.api.get<EventList>("/events");
    expect(events.body.data.items[0].data).toEqual({ plan: null, link: "[click](https://evil.example)" });
  });

  it("stores {value, persistent: false} on the event only, never on the contact (like /v1/send)", async () => {
    const p = await newProject();
    const res = await p.api.post<TrackResponse>("/v1/track", {
      email: "ada@example.com",
      event: "checkout",
      data: { plan: "pro", cartId: { value: "c-42", persistent: false }, seats: { value: 3 } },
    });
    expect(res.status).toBe(200);
    const contact = await p.api.get<Contact>(`/contacts/${res.body.data.contact}`);
    expect(contact.body.data).toEqual({ plan: "pro", seats: 3 });
    const events = await p.api.get<EventList>("/events");
    expect(events.body.data.items[0].data).toEqual({ plan: "pro", cartId: "c-42", seats: 3 });
  });

  it("records one event per call, each with its own id, against one contact", async () => {
    const p = await newProject();
    const results = await Promise.all(
      Array.from({ length: 5 }, () => p.publicApi.post<TrackResponse>("/v1/track", { email: "same@example.com", event: "click" })),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    // A public key learns no contact id but that of a contact its own event created.
    for (const r of results) expect(r.body.data.contact).toBe(r.body.data.event);
    expect(new Set(results.map((r) => r.body.data.event)).size).toBe(5);
    const list = await p.api.get<ContactList>("/contacts");
    expect(list.body.total).toBe(1);
    expect((await p.api.get<EventList>("/events")).body.data.total).toBe(5);
  });

  it("trims the event name", async () => {
    const p = await newProject();
    await p.publicApi.post("/v1/track", { email: "ada@example.com", event: "  purchase  " });
    expect((await p.api.get<EventList>("/events")).body.data.items[0].name).toBe("purchase");
  });

  it.each([
    ["missing email and event", {}, ["email", "event"]],
    ["a bad email", { email: "not-an-email", event: "x" }, ["email"]],
    ["an empty event", { email: "a@example.com", event: "" }, ["event"]],
    ["a blank event", { email: "a@example.com", event: "   " }, ["event"]],
    ["an event over 100 characters", { email: "a@example.com", event: "e".repeat(101) }, ["event"]],
    ["a newline in the event", { email: "a@example.com", event: "sign\nup" }, ["event"]],
    ["a null byte in the event", { email: "a@example.com", event: "signup\u0000" }, ["event"]],
    ["an event that is not a string", { email: "a@example.com", event: 7 }, ["event"]],
    ["data that is not an object", { email: "a@example.com", event: "x", data: [1, 2] }, ["data"]],
    ["subscribed that is not a boolean", { email: "a@example.com", event: "x", subscribed: "yes" }, ["subscribed"]],
  ])("422 for %s, and nothing is written", async (_label, body, fields) => {
    const p = await newProject();
    const err = expectError(await p.publicApi.post("/v1/track", body), 422, "VALIDATION_ERROR");
    expect(err.errors!.map((e) => e.field).sort()).toEqual(fields);
    expect((await p.api.get<ContactList>("/contacts")).body.total).toBe(0);
    expect((await p.api.get<EventList>("/events")).body.data.total).toBe(0);
  });

  it("accepts an event name of exactly 100 characters and unicode names", async () => {
    const p = await newProject();
    expect((await p.publicApi.post("/v1/track", { email: "a@example.com", event: "e".repeat(100) })).status).toBe(200);
    expect((await p.publicApi.post("/v1/track", { email: "a@example.com", event: "achat réussi ✓" })).status).toBe(200);
    const names = await p.api.get<EventNames>("/events/names");
    expect(names.body.data.items).toEqual(["achat réussi ✓", "e".repeat(100)]);
  });

  it("400 for malformed JSON and for a text/plain body", async () => {
    const p = await newProject();
    expectError(await call("POST", "/v1/track", { key: p.publicKey, rawBody: "{", headers: { "Content-Type": "application/json" } }), 400, "INVALID_JSON");
    expectError(
      await call("POST", "/v1/track", {
        key: p.publicKey,
        rawBody: JSON.stringify({ email: "a@example.com", event: "x" }),
        headers: { "Content-Type": "text/plain" },
      }),
      400,
    );
    expect((await p.api.get<EventList>("/events")).body.data.total).toBe(0);
  });

  it("401 for a missing, malformed or unknown key", async () => {
    const body = { email: "a@example.com", event: "x" };
    expectError(await call("POST", "/v1/track", { body }), 401, "UNAUTHORIZED");
    expectError(await call("POST", "/v1/track", { body, headers: { Authorization: "Bearer pk_short" } }), 401, "UNAUTHORIZED");
    expectError(await call("POST", "/v1/track", { body, key: `pk_${"a".repeat(48)}` }), 401, "UNAUTHORIZED");
  });

  it("records the event in the key's project only", async () => {
    const a = await newProject("A");
    const b = await newProject("B");
    await a.publicApi.post("/v1/track", { email: "ada@example.com", event: "a-only" });
    expect((await b.api.get<EventList>("/events")).body.data.total).toBe(0);
    expect((await b.api.get<ContactList>("/contacts")).body.total).toBe(0);
    const bTrack = await b.publicApi.post<TrackResponse>("/v1/track", { email: "ada@example.com", event: "b-only" });
    const aContact = await contactByEmail(a, "ada@example.com");
    expect(bTrack.body.data.contact).not.toBe(aContact!.id);
    expect((await a.api.get<EventNames>("/events/names")).body.data.items).toEqual(["a-only"]);
    expect((await b.api.get<EventNames>("/events/names")).body.data.items).toEqual(["b-only"]);
  });
});

describe("CORS on /v1/track", () => {
  it("answers a browser preflight from any origin, allowing Authorization", async () => {
    const res = await call("OPTIONS", "/v1/track", {
      headers: {
        Origin: "https://shop.example.org",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
      },
    });
    expect(res.status).toBeLessThan(300);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe("*");
    expect(res.headers.get("Access-Control-Allow-Methods")).toContain("POST");
    expect(res.headers.get("Access-Control-Allow-Headers")?.toLowerCase()).toContain("authorization");
  });

  it("adds Access-Control-Allow-Origin to the actual response, errors included", async () => {
    const p = await newProject();
    const ok = await call("POST", "/v1/track", {
      key: p.publicKey,
      body: { email: "a@example.com", event: "x" },
      headers: { Origin: "https://shop.example.org" },
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("Access-Control-Allow-Origin")).toBe("*");
    const denied = await call("POST", "/v1/track", { body: {}, headers: { Origin: "https://shop.example.org" } });
    expectError(denied, 401);
    expect(denied.headers.get("Access-Control-Allow-Origin")).toBe("*");
  });
});
