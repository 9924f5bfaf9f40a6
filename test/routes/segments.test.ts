import { describe, expect, it } from "vitest";
import { expectError, newProject } from "../support/http";
import type { z } from "@hono/zod-openapi";
import type { SegmentListResponseSchema, SegmentMemberListResponseSchema, SegmentSchema } from "../../src/schemas/segments";

type Segment = z.infer<typeof SegmentSchema>;
type SegmentList = z.infer<typeof SegmentListResponseSchema>;
type MemberList = z.infer<typeof SegmentMemberListResponseSchema>;

const proCondition = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] };

async function withContacts() {
  const project = await newProject("segments");
  for (const [email, plan, subscribed] of [
    ["a@example.com", "pro", true],
    ["b@example.com", "pro", false],
    ["c@example.com", "free", true],
    ["d@example.com", "pro", true],
  ] as const) {
    const res = await project.api.post("/contacts", { email, subscribed, data: { plan } });
    expect(res.status).toBe(201);
  }
  return project;
}

describe("segments", () => {
  it("creates a segment with a live memberCount (subscribed or not) and lists its members newest first with cursors", async () => {
    const project = await withContacts();
    const created = await project.api.post<Segment>("/segments", { name: "Pro", description: "Paying", condition: proCondition });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ name: "Pro", description: "Paying", condition: proCondition, memberCount: 3 });
    const id = created.body.id;

    const first = await project.api.get<MemberList>(`/segments/${id}/contacts?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.data.items.map((c) => c.email)).toEqual(["d@example.com", "b@example.com"]);
    expect(first.body.data).toMatchObject({ hasMore: true, total: 3 });
    expect(first.body.data.items[0]).toMatchObject({ subscribed: true, data: { plan: "pro" } });
    const second = await project.api.get<MemberList>(`/segments/${id}/contacts?limit=2&cursor=${first.body.data.nextCursor}`);
    expect(second.body.data.items.map((c) => c.email)).toEqual(["a@example.com"]);
    expect(second.body.data).toMatchObject({ hasMore: false, nextCursor: null });

    // Live: a contact changing plan changes the count without touching the segment.
    await project.api.post("/contacts", { email: "c@example.com", data: { plan: "pro" } });
    expect((await project.api.get<Segment>(`/segments/${id}`)).body.memberCount).toBe(4);

    const list = await project.api.get<SegmentList>("/segments");
    expect(list.body).toMatchObject({ success: true, data: { total: 1, hasMore: false, nextCursor: null } });
    expect(list.body.data.items[0]).toMatchObject({ id, memberCount: 4 });
  });

  it("updates name, description and condition; an empty update changes nothing", async () => {
    const project = await withContacts();
    const { body } = await project.api.post<Segment>("/segments", { name: "Pro", condition: proCondition });
    const same = await project.api.patch<Segment>(`/segments/${body.id}`, {});
    expect(same.body).toMatchObject({ name: "Pro", description: null, memberCount: 3 });
    const updated = await project.api.patch<Segment>(`/segments/${body.id}`, {
      name: "Free",
      description: "Not paying",
      condition: { logic: "OR", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "free" }] }] },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: "Free", description: "Not paying", memberCount: 1 });
  });

  it("refuses a bad condition with a 422 naming the bad part, and stores nothing", async () => {
    const project = await withContacts();
    const bad = await project.api.post<Segment>("/segments", {
      name: "Bad",
      condition: {
        logic: "AND",
        groups: [
          {
            filters: [
              { field: "email", operator: "exists" },
              { field: "email", operator: "between", value: "a" },
            ],
          },
        ],
      },
    });
    const error = expectError(bad, 422, "VALIDATION_ERROR");
    expect(error.errors?.map((e) => e.field)).toContain("condition.groups.0.filters.1.operator");
    const missingUnit = await project.api.post<Segment>("/segments", {
      name: "Bad",
      condition: { logic: "AND", groups: [{ filters: [{ field: "event.signup", operator: "triggeredWithin", value: 3 }] }] },
    });
    expect(expectError(missingUnit, 422).errors?.map((e) => e.field)).toContain("condition.groups.0.filters.0.unit");
    const noName = await project.api.post<Segment>("/segments", { condition: proCondition });
    expect(expectError(noName, 422).errors?.map((e) => e.field)).toContain("name");
    const patchBad = await project.api.post<Segment>("/segments", { name: "ok", condition: proCondition });
    const badPatch = await project.api.patch<Segment>(`/segments/${patchBad.body.id}`, {
      condition: { logic: "AND", groups: [{ filters: [{ field: "data.x y", operator: "exists" }] }] },
    });
    expect(expectError(badPatch, 422).errors?.map((e) => e.field)).toContain("condition.groups.0.filters.0.field");
    expect((await project.api.get<SegmentList>("/segments")).body.data.total).toBe(1);
  });

  it("keeps projects apart: another project's segment is a 404 everywhere", async () => {
    const project = await withContacts();
    const other = await newProject("other");
    const { body } = await project.api.post<Segment>("/segments", { name: "Pro", condition: proCondition });
    expectError(await other.api.get<Segment>(`/segments/${body.id}`), 404, "NOT_FOUND");
    expectError(await other.api.get<MemberList>(`/segments/${body.id}/contacts`), 404, "NOT_FOUND");
    expectError(await other.api.patch<Segment>(`/segments/${body.id}`, { name: "x" }), 404, "NOT_FOUND");
    expectError(await other.api.delete(`/segments/${body.id}`), 404, "NOT_FOUND");
    // The same condition in another project counts only that project's contacts.
    const mine = await other.api.post<Segment>("/segments", { name: "Pro", condition: proCondition });
    expect(mine.body.memberCount).toBe(0);
    expect((await project.api.get<Segment>(`/segments/${body.id}`)).body.memberCount).toBe(3);
  });

  it("deletes a segment no campaign uses", async () => {
    const project = await withContacts();
    const { body } = await project.api.post<Segment>("/segments", { name: "Pro", condition: proCondition });
    expect((await project.api.delete(`/segments/${body.id}`)).status).toBe(204);
    expectError(await project.api.get<Segment>(`/segments/${body.id}`), 404);
  });

  it("needs a secret key", async () => {
    const project = await withContacts();
    expectError(await project.publicApi.get("/segments"), 403);
  });
});
