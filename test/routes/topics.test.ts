import { env } from "cloudflare:workers";
import type { z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import type { ContactTopicListResponseSchema, TopicListResponseSchema, TopicSchema } from "../../src/schemas/topics";
import { expectError, newProject, type TestProject } from "../support/http";
import { automationProject } from "../support/workflows";

type Topic = z.infer<typeof TopicSchema>;
type TopicList = z.infer<typeof TopicListResponseSchema>;
type ContactTopics = z.infer<typeof ContactTopicListResponseSchema>;

const storedBytes = async (projectId: string) =>
  (await env.DB.prepare("SELECT stored_bytes AS b FROM projects WHERE id = ?").bind(projectId).first<{ b: number }>())!.b;

async function topic(project: TestProject, body: Record<string, unknown>) {
  const res = await project.api.post<Topic>("/topics", body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function contact(project: TestProject, body: Record<string, unknown>) {
  const res = await project.api.post<{ id: string }>("/contacts", body);
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body.id;
}

/** A project that can have double opt-in topics: a verified domain and a confirmation template ({{confirmUrl}}). */
async function confirmingProject(): Promise<TestProject> {
  const a = await automationProject();
  const templateId = await a.template("Confirm", { body: '<p><a href="{{confirmUrl}}">confirm</a></p>' });
  expect((await a.project.api.patch("/project", { doubleOptInTemplateId: templateId })).status).toBe(200);
  return a.project;
}

describe("topics", () => {
  it("creates, reads, lists, updates and deletes a topic; the bare object has the contract's fields", async () => {
    const project = await confirmingProject();
    const before = await storedBytes(project.id);
    const created = await topic(project, { key: "product-updates", name: "Product updates", description: "What we ship", defaultSubscription: "OPT_IN" });
    expect(created).toMatchObject({
      key: "product-updates",
      name: "Product updates",
      description: "What we ship",
      defaultSubscription: "OPT_IN",
      visibility: "PRIVATE",
      doubleOptIn: false,
    });
    expect(Object.keys(created).sort()).toEqual(
      ["id", "key", "name", "description", "defaultSubscription", "visibility", "doubleOptIn", "createdAt", "updatedAt"].sort(),
    );
    expect(await storedBytes(project.id)).toBe(before + "Product updates".length + "What we ship".length);

    const got = await project.api.get<Topic>(`/topics/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created);

    await topic(project, { key: "events", name: "Events", defaultSubscription: "OPT_OUT", visibility: "PUBLIC" });
    const list = await project.api.get<TopicList>("/topics?limit=1");
    expect(list.status).toBe(200);
    expect(list.body.success).toBe(true);
    expect(list.body.data).toMatchObject({ hasMore: true, total: 2 });
    expect(list.body.data.items.map((t) => t.key)).toEqual(["events"]);
    const next = await project.api.get<TopicList>(`/topics?limit=1&cursor=${list.body.data.nextCursor}`);
    expect(next.body.data.items.map((t) => t.key)).toEqual(["product-updates"]);
    expect(next.body.data).toMatchObject({ hasMore: false, nextCursor: null });

    const updated = await project.api.patch<Topic>(`/topics/${created.id}`, { name: "News", visibility: "PUBLIC", doubleOptIn: true, description: null });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ key: "product-updates", name: "News", description: null, visibility: "PUBLIC", doubleOptIn: true });
    expect(await storedBytes(project.id)).toBe(before + "News".length + "Events".length);

    expect((await project.api.delete(`/topics/${created.id}`)).status).toBe(204);
    expectError(await project.api.get(`/topics/${created.id}`), 404, "NOT_FOUND");
    expectError(await project.api.delete(`/topics/${created.id}`), 404, "NOT_FOUND");
    expect(await storedBytes(project.id)).toBe(before + "Events".length);
  });

  it("refuses bad input with a 422 naming the field, and changes nothing", async () => {
    const project = await newProject("topics validation");
    for (const [body, field] of [
      [{ key: "Has Caps", name: "x", defaultSubscription: "OPT_IN" }, "key"],
      [{ key: "-leading", name: "x", defaultSubscription: "OPT_IN" }, "key"],
      [{ key: "a".repeat(51), name: "x", defaultSubscription: "OPT_IN" }, "key"],
      [{ key: "ok", name: "n".repeat(51), defaultSubscription: "OPT_IN" }, "name"],
      [{ key: "ok", name: "x", description: "d".repeat(201), defaultSubscription: "OPT_IN" }, "description"],
      [{ key: "ok", name: "x", defaultSubscription: "MAYBE" }, "defaultSubscription"],
      [{ key: "ok", name: "x" }, "defaultSubscription"],
      [{ key: "ok", name: "x", defaultSubscription: "OPT_IN", visibility: "SECRET" }, "visibility"],
    ] as const) {
      const error = expectError(await project.api.post("/topics", body), 422, "VALIDATION_ERROR");
      expect(error.errors?.map((e) => e.field)).toContain(field);
    }
    const created = await topic(project, { key: "ok", name: "x", defaultSubscription: "OPT_IN" });
    expectError(await project.api.post("/topics", { key: "ok", name: "again", defaultSubscription: "OPT_OUT" }), 409, "CONFLICT");
    for (const field of ["key", "defaultSubscription"]) {
      const error = expectError(await project.api.patch(`/topics/${created.id}`, { [field]: field === "key" ? "new" : "OPT_OUT" }), 422);
      expect(JSON.stringify(error.errors)).toContain(field);
    }
    expect((await project.api.get<Topic>(`/topics/${created.id}`)).body).toEqual(created);
    expect((await project.api.get<TopicList>("/topics")).body.data.total).toBe(1);
  });

  it("keeps at most QUOTA_TOPICS (100) topics per project", async () => {
    const project = await newProject("topics quota");
    for (let i = 0; i < 100; i++) await topic(project, { key: `t${i}`, name: `Topic ${i}`, defaultSubscription: "OPT_IN" });
    const error = expectError(await project.api.post("/topics", { key: "one-more", name: "x", defaultSubscription: "OPT_IN" }), 403, "QUOTA_EXCEEDED");
    expect(error.message).toContain("100 topics");
    expect((await project.api.get<TopicList>("/topics")).body.data.total).toBe(100);
  });

  it("never shows or changes another project's topics or contacts", async () => {
    const owner = await newProject("topics owner");
    const other = await newProject("topics other");
    const mine = await topic(owner, { key: "news", name: "News", defaultSubscription: "OPT_IN" });
    const contactId = await contact(owner, { email: "a@example.com" });
    expectError(await other.api.get(`/topics/${mine.id}`), 404, "NOT_FOUND");
    expectError(await other.api.patch(`/topics/${mine.id}`, { name: "Mine now" }), 404, "NOT_FOUND");
    expectError(await other.api.delete(`/topics/${mine.id}`), 404, "NOT_FOUND");
    expect((await other.api.get<TopicList>("/topics")).body.data).toMatchObject({ items: [], total: 0 });
    expectError(await other.api.get(`/contacts/${contactId}/topics`), 404, "NOT_FOUND");
    expectError(await other.api.patch(`/contacts/${contactId}/topics`, { topics: [{ key: "news", subscription: "OPT_OUT" }] }), 404, "NOT_FOUND");
    // The same key in another project is another topic: unknown to the other project's contacts.
    const otherContact = await contact(other, { email: "a@example.com" });
    const error = expectError(await other.api.patch(`/contacts/${otherContact}/topics`, { topics: [{ key: "news", subscription: "OPT_OUT" }] }), 422);
    expect(error.errors?.[0].field).toBe("topics.0.key");
    expect((await owner.api.get<Topic>(`/topics/${mine.id}`)).body.name).toBe("News");
  });

  it("a contact's topics: every topic with the default until the contact chooses, then its choice", async () => {
    const project = await confirmingProject();
    await topic(project, { key: "news", name: "News", defaultSubscription: "OPT_IN" });
    await topic(project, { key: "events", name: "Events", defaultSubscription: "OPT_OUT" });
    await topic(project, { key: "beta", name: "Beta", defaultSubscription: "OPT_OUT", doubleOptIn: true });
    const id = await contact(project, { email: "c@example.com" });

    const initial = await project.api.get<ContactTopics>(`/contacts/${id}/topics`);
    expect(initial.status).toBe(200);
    expect(initial.body.data).toMatchObject({ hasMore: false, nextCursor: null, total: 3 });
    expect(initial.body.data.items.map(({ key, subscription, explicit }) => ({ key, subscription, explicit }))).toEqual([
      { key: "news", subscription: "OPT_IN", explicit: false },
      { key: "events", subscription: "OPT_OUT", explicit: false },
      { key: "beta", subscription: "OPT_OUT", explicit: false },
    ]);

    const patched = await project.api.patch<ContactTopics>(`/contacts/${id}/topics`, {
      topics: [
        { key: "news", subscription: "OPT_OUT" },
        { key: "events", subscription: "OPT_IN" },
        { key: "beta", subscription: "OPT_IN" },
      ],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.data.items.map(({ key, subscription, explicit }) => ({ key, subscription, explicit }))).toEqual([
      { key: "news", subscription: "OPT_OUT", explicit: true },
      { key: "events", subscription: "OPT_IN", explicit: true },
      // A double opt-in topic waits for the contact's confirmation.
      { key: "beta", subscription: "PENDING", explicit: true },
    ]);
    expect((await project.api.get<ContactTopics>(`/contacts/${id}/topics`)).body).toEqual(patched.body);

    // Each change is an event on the contact's timeline.
    const events = await env.DB.prepare("SELECT name, json_extract(data, '$.topic') AS topic FROM events WHERE contact_id = ? ORDER BY name")
      .bind(id)
      .all<{ name: string; topic: string }>();
    expect(events.results).toEqual([
      { name: "topic.opted_in", topic: "events" },
      { name: "topic.opted_out", topic: "news" },
      { name: "topic.pending", topic: "beta" },
    ]);

    const unknown = expectError(
      await project.api.patch(`/contacts/${id}/topics`, {
        topics: [
          { key: "news", subscription: "OPT_IN" },
          { key: "nope", subscription: "OPT_IN" },
        ],
      }),
      422,
    );
    expect(unknown.errors?.map((e) => e.field)).toEqual(["topics.1.key"]);
    expect((await project.api.get<ContactTopics>(`/contacts/${id}/topics`)).body).toEqual(patched.body);
    expectError(await project.api.patch(`/contacts/${id}/topics`, { topics: [{ key: "news", subscription: "PENDING" }] }), 422);
    expectError(await project.api.patch(`/contacts/${id}/topics`, { topics: [] }), 422);
  });

  it("POST /contacts and a secret-key /v1/track take topics {key: true|false}; a public key may not; an unknown key is a 422", async () => {
    const project = await newProject("topics on contacts");
    await topic(project, { key: "news", name: "News", defaultSubscription: "OPT_OUT" });
    await topic(project, { key: "tips", name: "Tips", defaultSubscription: "OPT_IN" });
    const id = await contact(project, { email: "d@example.com", topics: { news: true, tips: false } });
    const list = (await project.api.get<ContactTopics>(`/contacts/${id}/topics`)).body.data.items;
    expect(list.map((t) => [t.key, t.subscription])).toEqual([
      ["news", "OPT_IN"],
      ["tips", "OPT_OUT"],
    ]);

    const unknown = expectError(await project.api.post("/contacts", { email: "e@example.com", topics: { missing: true } }), 422);
    expect(unknown.errors?.map((e) => e.field)).toEqual(["topics.missing"]);
    expect((await project.api.get<{ total: number }>("/contacts")).body.total).toBe(1);

    const tracked = await project.api.post<{ data: { contact: string } }>("/v1/track", { email: "f@example.com", event: "signed-up", topics: { news: true } });
    expect(tracked.status, JSON.stringify(tracked.body)).toBe(200);
    const trackedTopics = (await project.api.get<ContactTopics>(`/contacts/${tracked.body.data.contact}/topics`)).body.data.items;
    expect(trackedTopics.find((t) => t.key === "news")).toMatchObject({ subscription: "OPT_IN", explicit: true });

    expectError(await project.publicApi.post("/v1/track", { email: "g@example.com", event: "signed-up", topics: { news: true } }), 403, "FORBIDDEN");
    const badTrack = expectError(await project.api.post("/v1/track", { email: "g@example.com", event: "signed-up", topics: { nope: false } }), 422);
    expect(badTrack.errors?.map((e) => e.field)).toEqual(["topics.nope"]);
  });

  it("deleting a contact or a topic deletes its choices", async () => {
    const project = await newProject("topics cascade");
    const news = await topic(project, { key: "news", name: "News", defaultSubscription: "OPT_IN" });
    const tips = await topic(project, { key: "tips", name: "Tips", defaultSubscription: "OPT_IN" });
    const a = await contact(project, { email: "a@example.com", topics: { news: false, tips: false } });
    const b = await contact(project, { email: "b@example.com", topics: { news: false } });
    const count = async () =>
      (await env.DB.prepare("SELECT count(*) AS n FROM contact_topics WHERE project_id = ?").bind(project.id).first<{ n: number }>())!.n;
    expect(await count()).toBe(3);
    expect((await project.api.delete(`/contacts/${a}`)).status).toBe(204);
    expect(await count()).toBe(1);
    expect((await project.api.delete(`/topics/${news.id}`)).status).toBe(204);
    expect(await count()).toBe(0);
    expect((await project.api.get<ContactTopics>(`/contacts/${b}/topics`)).body.data.items.map((t) => t.id)).toEqual([tips.id]);
  });
});
