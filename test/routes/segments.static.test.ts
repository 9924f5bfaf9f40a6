import { describe, expect, it } from "vitest";
import type { z } from "@hono/zod-openapi";
import { call, expectError, newProject, type TestProject } from "../support/http";
import { campaignSetup, callsPerAddress } from "../support/campaigns";
import { recordedEvents, webhookProject } from "../support/webhooks";
import type { SegmentMemberListResponseSchema, SegmentSchema } from "../../src/schemas/segments";

type Segment = z.infer<typeof SegmentSchema>;
type MemberList = z.infer<typeof SegmentMemberListResponseSchema>;

const remove = (project: TestProject, path: string, body: unknown) => call<{ removed: number }>("DELETE", path, { key: project.secretKey, body });

async function withContacts(emails: string[]) {
  const project = await newProject("static segments");
  for (const email of emails) expect((await project.api.post("/contacts", { email })).status).toBe(201);
  return project;
}

describe("static segments", () => {
  it("creates a list, adds and removes members by email, counts and lists them", async () => {
    const project = await withContacts(["a@example.com", "b@example.com", "c@example.com"]);
    const created = await project.api.post<Segment>("/segments", { name: "Beta testers", type: "STATIC" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ name: "Beta testers", type: "STATIC", condition: null, memberCount: 0 });
    const id = created.body.id;

    const added = await project.api.post<{ added: number; missing: string[] }>(`/segments/${id}/members`, {
      emails: ["A@example.com", "b@example.com", "nobody@example.com", "a@example.com"],
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body).toEqual({ added: 2, missing: ["nobody@example.com"] });
    // Adding a member again adds nothing.
    expect((await project.api.post(`/segments/${id}/members`, { emails: ["b@example.com"] })).body).toEqual({ added: 0, missing: [] });

    expect((await project.api.get<Segment>(`/segments/${id}`)).body.memberCount).toBe(2);
    const members = await project.api.get<MemberList>(`/segments/${id}/contacts`);
    expect(members.body.data.items.map((c) => c.email).sort()).toEqual(["a@example.com", "b@example.com"]);
    expect(members.body.data.total).toBe(2);

    // createMissing makes the contact and adds it.
    const created2 = await project.api.post<{ added: number; missing: string[] }>(`/segments/${id}/members`, {
      emails: ["nobody@example.com"],
      createMissing: true,
    });
    expect(created2.body).toEqual({ added: 1, missing: [] });

    const removed = await remove(project, `/segments/${id}/members`, { emails: ["a@example.com", "c@example.com"] });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ removed: 1 });
    expect((await project.api.get<Segment>(`/segments/${id}`)).body.memberCount).toBe(2);

    // A deleted contact leaves every list.
    const now = await project.api.get<MemberList>(`/segments/${id}/contacts`);
    const b = now.body.data.items.find((c) => c.email === "b@example.com")!;
    expect((await project.api.delete(`/contacts/${b.id}`)).status).toBe(204);
    const after = await project.api.get<MemberList>(`/segments/${id}/contacts`);
    expect(after.body.data.items.map((c) => c.email)).toEqual(["nobody@example.com"]);
  });

  it("refuses a condition on a static segment, members on a dynamic one, and too many addresses", async () => {
    const project = await withContacts(["a@example.com"]);
    const condition = { logic: "AND", groups: [{ filters: [{ field: "email", operator: "exists" }] }] };
    expect(expectError(await project.api.post("/segments", { name: "x", type: "STATIC", condition }), 422).errors?.[0].field).toBe("condition");
    expect(expectError(await project.api.post("/segments", { name: "x" }), 422).errors?.[0].field).toBe("condition");

    const dynamic = await project.api.post<Segment>("/segments", { name: "All", condition });
    expect(dynamic.body.type).toBe("DYNAMIC");
    expectError(await project.api.post(`/segments/${dynamic.body.id}/members`, { emails: ["a@example.com"] }), 400, "INVALID_STATE");

    const list = await project.api.post<Segment>("/segments", { name: "List", type: "STATIC" });
    expectError(await project.api.patch(`/segments/${list.body.id}`, { condition }), 422);
    const tooMany = Array.from({ length: 501 }, (_, i) => `u${i}@example.com`);
    expect(expectError(await project.api.post(`/segments/${list.body.id}/members`, { emails: tooMany }), 422).errors?.[0].field).toBe("emails");
    expect(expectError(await project.api.post(`/segments/${list.body.id}/members`, { emails: ["not-an-address"] }), 422).errors?.[0].field).toBe("emails.0");
    expectError(await project.api.post(`/segments/unknown/members`, { emails: ["a@example.com"] }), 404);
  });

  it("a condition on `segment` matches a list's members; an unknown list is a 422 naming the value", async () => {
    const project = await withContacts(["a@example.com", "b@example.com", "c@example.com"]);
    const list = await project.api.post<Segment>("/segments", { name: "List", type: "STATIC" });
    await project.api.post(`/segments/${list.body.id}/members`, { emails: ["a@example.com", "b@example.com"] });
    const inList = { logic: "AND", groups: [{ filters: [{ field: "segment", operator: "equals", value: list.body.id }] }] };
    const notInList = { logic: "AND", groups: [{ filters: [{ field: "segment", operator: "notEquals", value: list.body.id }] }] };
    expect((await project.api.post<Segment>("/segments", { name: "in", condition: inList })).body.memberCount).toBe(2);
    expect((await project.api.post<Segment>("/segments", { name: "out", condition: notInList })).body.memberCount).toBe(1);
    const bad = { logic: "AND", groups: [{ filters: [{ field: "segment", operator: "equals", value: "nope" }] }] };
    expect(expectError(await project.api.post("/segments", { name: "bad", condition: bad }), 422).errors?.[0].field).toBe("condition.groups.0.filters.0.value");
  });

  it("a SEGMENT campaign to a list sends to its subscribed members only, once each", async () => {
    const s = await campaignSetup();
    const contacts = await s.addContacts([
      { email: "m1@example.com" },
      { email: "m2@example.com", subscribed: false },
      { email: "m3@example.com" },
      { email: "other@example.com" },
    ]);
    expect(contacts).toHaveLength(4);
    const list = await s.request<Segment>("POST", "/segments", { name: "List", type: "STATIC" });
    const added = await s.request("POST", `/segments/${list.body.id}/members`, { emails: ["m1@example.com", "m2@example.com", "m3@example.com"] });
    expect(added.body).toEqual({ added: 3, missing: [] });
    const campaign = await s.createCampaign({ audienceType: "SEGMENT", segmentId: list.body.id });
    const sent = await s.request("POST", `/campaigns/${campaign.id}/send`, {});
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await s.pump();
    const calls = callsPerAddress(s.ses.calls);
    expect([...calls.keys()].sort()).toEqual(["m1@example.com", "m3@example.com"]);
    expect([...calls.values()]).toEqual([1, 1]);
  });
});

describe("members created by createMissing", () => {
  it("are reported like any new contact: one contact.created webhook event each, none for an address that had a contact", async () => {
    const project = await webhookProject("static segment webhooks");
    await project.createWebhook({ url: "https://hooks.example.net/in", events: ["contact.created"] });
    expect((await project.call("POST", "/contacts", { email: "known@example.com" })).status).toBe(201);
    const list = await project.call<Segment>("POST", "/segments", { name: "Beta", type: "STATIC" });
    const added = await project.call<{ added: number; missing: string[] }>("POST", `/segments/${list.body.id}/members`, {
      emails: ["known@example.com", "new1@example.com", "new2@example.com"],
      createMissing: true,
    });
    expect(added.body).toEqual({ added: 3, missing: [] });
    expect(await recordedEvents(project.id, ["contact.created"])).toEqual(["contact.created", "contact.created", "contact.created"]);
    // Again: every address has a contact now, so nothing more is reported.
    await project.call("POST", `/segments/${list.body.id}/members`, { emails: ["new1@example.com"], createMissing: true });
    expect(await recordedEvents(project.id, ["contact.created"])).toHaveLength(3);
  });
});
