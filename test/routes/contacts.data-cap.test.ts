import { describe, expect, it } from "vitest";
import { MAX_CONTACT_DATA_BYTES } from "../../src/store/guards";
import { expectError, newProject } from "../support/http";
import { sendingSetup } from "../support/sending";
import type { Contact, EmailList, EventList, UpsertedContact } from "../support/api";

/** About 30 KB of data under distinct keys, so three of them merged pass the 64 KB cap. */
const chunk = (tag: string) => Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`${tag}${i}`, "x".repeat(1000)]));

function expectDataTooLarge(res: Parameters<typeof expectError>[0]) {
  const error = expectError(res, 422, "VALIDATION_ERROR");
  expect(error.errors).toEqual([expect.objectContaining({ field: "data", code: "too_big" })]);
}

describe(`contact data cap (${MAX_CONTACT_DATA_BYTES} bytes after merging)`, () => {
  it("POST /contacts and PATCH /contacts/{id}: a merge past the cap is a 422 on data and changes nothing", async () => {
    const p = await newProject();
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "ada@example.com", data: chunk("a") });
    expect(created.status).toBe(201);
    expect((await p.api.post("/contacts", { email: "ada@example.com", data: chunk("b") })).status).toBe(200);
    const before = (await p.api.get<Contact>(`/contacts/${created.body.id}`)).body;

    expectDataTooLarge(await p.api.post("/contacts", { email: "ada@example.com", data: chunk("c") }));
    expectDataTooLarge(await p.api.patch(`/contacts/${created.body.id}`, { data: chunk("d"), subscribed: false }));
    expect((await p.api.get<Contact>(`/contacts/${created.body.id}`)).body).toEqual(before);

    // Removing keys (null) still works and makes room again.
    const trimmed = await p.api.patch<Contact>(`/contacts/${created.body.id}`, { data: Object.fromEntries(Object.keys(chunk("a")).map((k) => [k, null])) });
    expect(trimmed.status).toBe(200);
    expect((await p.api.post("/contacts", { email: "ada@example.com", data: chunk("c") })).status).toBe(200);
  });

  it("POST /v1/track: a merge past the cap is a 422 on data, and neither the contact nor the event is written", async () => {
    const p = await newProject();
    await p.api.post("/contacts", { email: "ada@example.com", data: chunk("a") });
    await p.api.post("/v1/track", { email: "ada@example.com", event: "grow", data: chunk("b") });
    const events = (await p.api.get<EventList>("/events")).body.data.total;
    expectDataTooLarge(await p.api.post("/v1/track", { email: "ada@example.com", event: "grow", data: chunk("c") }));
    expect((await p.api.get<EventList>("/events")).body.data.total).toBe(events);
    // Per-event values that are not persistent never touch the contact, so they are accepted.
    const transient = Object.fromEntries(Object.entries(chunk("c")).map(([k, v]) => [k, { value: v, persistent: false }]));
    expect((await p.api.post("/v1/track", { email: "ada@example.com", event: "grow", data: transient })).status).toBe(200);
  });

  it("POST /v1/send: a merge past the cap is a 422 on data and nothing is queued", async () => {
    const s = await sendingSetup();
    await s.project.api.post("/contacts", { email: "ada@example.com", data: chunk("a") });
    await s.project.api.post("/contacts", { email: "ada@example.com", data: chunk("b") });
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", body: "<p>Hi</p>", data: chunk("c") });
    expectDataTooLarge(res);
    expect(s.queue.messages).toHaveLength(0);
    expect((await s.get<EmailList>("/emails")).body.data.total).toBe(0);
  });
});
