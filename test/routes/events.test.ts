import { describe, expect, it } from "vitest";
import { call, expectError, type JsonResponse, newProject, type TestProject } from "../support/http";
import type { z } from "@hono/zod-openapi";
import type { EventListResponseSchema, EventNamesResponseSchema } from "../../src/schemas/events";
import type { TrackResponse } from "../support/api";

type EventList = z.infer<typeof EventListResponseSchema>;
type EventNames = z.infer<typeof EventNamesResponseSchema>;

async function track(p: TestProject, email: string, event: string, data?: Record<string, unknown>) {
  const res = await p.publicApi.post<TrackResponse>("/v1/track", { email, event, ...(data ? { data } : {}) });
  expect(res.status).toBe(200);
  return res.body.data as { contact: string; event: string; timestamp: string };
}

describe("GET /events", () => {
  it("lists events newest first in the general list shape, with the contact's email", async () => {
    const p = await newProject();
    const first = await track(p, "ada@example.com", "signed-up", { source: "ad" });
    const second = await track(p, "bob@example.com", "purchase", { amount: 10 });
    const res = await p.api.get<EventList>("/events");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        items: [
          {
            id: second.event,
            name: "purchase",
            contactId: second.contact,
            email: "bob@example.com",
            data: { amount: 10 },
            emailId: null,
            source: "public",
            createdAt: second.timestamp,
          },
          {
            id: first.event,
            name: "signed-up",
            contactId: first.contact,
            email: "ada@example.com",
            data: { source: "ad" },
            emailId: null,
            source: "public",
            createdAt: first.timestamp,
          },
        ],
        nextCursor: null,
        hasMore: false,
        total: 2,
      },
    });
  });

  it("pages with nextCursor: every event exactly once, newest first, even while new events arrive", async () => {
    const p = await newProject();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await track(p, `u${i}@example.com`, "step")).event);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: JsonResponse<EventList> = await p.api.get<EventList>(`/events?limit=3${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      expect(res.body.data.items.length).toBeLessThanOrEqual(3);
      seen.push(...res.body.data.items.map((e) => e.id));
      cursor = res.body.data.nextCursor;
      expect(res.body.data.hasMore).toBe(cursor !== null);
      // A newer event must not shift later pages.
      if (pages === 0) await track(p, "late@example.com", "step");
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
  });

  it("filters by name and by contactId, with total counting the matches", async () => {
    const p = await newProject();
    const ada = await track(p, "ada@example.com", "click");
    await track(p, "ada@example.com", "purchase");
    await track(p, "bob@example.com", "click");
    await track(p, "bob@example.com", "click");

    const clicks = await p.api.get<EventList>("/events?name=click");
    expect(clicks.body.data.total).toBe(3);
    expect(clicks.body.data.items.every((e) => e.name === "click")).toBe(true);

    const adaEvents = await p.api.get<EventList>(`/events?contactId=${ada.contact}`);
    expect(adaEvents.body.data.total).toBe(2);
    expect(adaEvents.body.data.items.map((e) => e.name)).toEqual(["purchase", "click"]);

    const adaClicks = await p.api.get<EventList>(`/events?contactId=${ada.contact}&name=click`);
    expect(adaClicks.body.data.items.map((e) => e.id)).toEqual([ada.event]);

    const none = await p.api.get<EventList>("/events?name=nothing-like-this");
    expect(none.body.data).toEqual({ items: [], nextCursor: null, hasMore: false, total: 0 });

    const filteredPage = await p.api.get<EventList>("/events?name=click&limit=2");
    expect(filteredPage.body.data).toMatchObject({ hasMore: true, total: 3 });
    const rest = await p.api.get<EventList>(`/events?name=click&limit=2&cursor=${filteredPage.body.data.nextCursor}`);
    expect(rest.body.data.items.map((e) => e.id)).toEqual([ada.event]);
  });

  it("deleting a contact removes its events", async () => {
    const p = await newProject();
    const ada = await track(p, "ada@example.com", "click");
    await track(p, "ada@example.com", "purchase");
    const bob = await track(p, "bob@example.com", "click");
    expect((await p.api.delete(`/contacts/${ada.contact}`)).status).toBe(204);

    const res = await p.api.get<EventList>("/events");
    expect(res.body.data.total).toBe(1);
    expect(res.body.data.items.map((e) => e.id)).toEqual([bob.event]);
    expect((await p.api.get<EventList>(`/events?contactId=${ada.contact}`)).body.data.total).toBe(0);
    expect((await p.api.get<EventNames>("/events/names")).body.data.counts).toEqual({ click: 1 });
  });

  it("422 for a bad limit, cursor or filter", async () => {
    const p = await newProject();
    expect(expectError(await p.api.get<EventList>("/events?limit=0"), 422, "VALIDATION_ERROR").errors![0].field).toBe("limit");
    expect(expectError(await p.api.get<EventList>("/events?limit=500"), 422).errors![0].field).toBe("limit");
    expect(expectError(await p.api.get<EventList>("/events?cursor=not-a-cursor"), 422).errors![0].field).toBe("cursor");
    expect(expectError(await p.api.get<EventList>(`/events?name=${"n".repeat(101)}`), 422).errors![0].field).toBe("name");
    expect(expectError(await p.api.get<EventList>(`/events?contactId=${"c".repeat(65)}`), 422).errors![0].field).toBe("contactId");
  });

  it("never shows another project's events, even when filtering by its contact id", async () => {
    const a = await newProject("A");
    const b = await newProject("B");
    const ada = await track(a, "ada@example.com", "secret-thing");
    await track(b, "bob@example.com", "b-thing");

    const listB = await b.api.get<EventList>("/events");
    expect(listB.body.data.total).toBe(1);
    expect(listB.body.data.items.map((e) => e.name)).toEqual(["b-thing"]);
    expect((await b.api.get<EventList>(`/events?contactId=${ada.contact}`)).body.data).toEqual({
      items: [],
      nextCursor: null,
      hasMore: false,
      total: 0,
    });
    expect((await b.api.get<EventList>("/events?name=secret-thing")).body.data.total).toBe(0);
  });
});

describe("GET /events/names", () => {
  it("lists distinct names alphabetically with a count per name", async () => {
    const p = await newProject();
    await track(p, "ada@example.com", "purchase");
    await track(p, "ada@example.com", "click");
    await track(p, "bob@example.com", "click");
    await track(p, "bob@example.com", "signed-up");
    await track(p, "cy@example.com", "click");
    const res = await p.api.get<EventNames>("/events/names");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: {
        items: ["click", "purchase", "signed-up"],
        nextCursor: null,
        hasMore: false,
        total: 3,
        counts: { click: 3, purchase: 1, "signed-up": 1 },
      },
    });
  });

  it("keeps a name like __proto__ in counts", async () => {
    const p = await newProject();
    await track(p, "ada@example.com", "__proto__");
    const res = await p.api.get<EventNames>("/events/names");
    expect(res.body.data.items).toEqual(["__proto__"]);
    expect(Object.keys(res.body.data.counts)).toEqual(["__proto__"]);
  });

  it("is empty for a project without events and never includes another project's names", async () => {
    const a = await newProject("A");
    const b = await newProject("B");
    await track(a, "ada@example.com", "a-event");
    expect((await b.api.get<EventNames>("/events/names")).body).toEqual({
      success: true,
      data: { items: [], nextCursor: null, hasMore: false, total: 0, counts: {} },
    });
  });
});

describe("events auth", () => {
  it("401 for a missing, malformed or unknown key", async () => {
    expectError(await call("GET", "/events"), 401, "UNAUTHORIZED");
    expectError(await call("GET", "/events/names", { headers: { Authorization: "Basic abc" } }), 401, "UNAUTHORIZED");
    expectError(await call("GET", "/events", { key: `sk_${"f".repeat(48)}` }), 401, "UNAUTHORIZED");
  });

  it("403 for a public key: events are read with a secret key only", async () => {
    const p = await newProject();
    await track(p, "ada@example.com", "click");
    expectError(await p.publicApi.get("/events"), 403, "FORBIDDEN");
    expectError(await p.publicApi.get("/events/names"), 403, "FORBIDDEN");
  });

  it("unknown paths under /events are 404 for a secret key", async () => {
    const p = await newProject();
    expectError(await p.api.get("/events/nope/names"), 404, "NOT_FOUND");
  });
});
