/**
 * A project's default sender (PATCH /project defaultFrom, ../shared/CONTRACT.md "Default sender"): a send or
 * campaign whose request and template give no from address uses it, so Plunk clients that omit `from` work.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { decodeWords } from "../fakes/ses";
import { expectError } from "../support/http";
import { sendingSetup } from "../support/sending";
import type { CampaignResponse, Email } from "../support/api";

afterEach(() => vi.restoreAllMocks());

type Settings = { data: { defaultFrom: { email: string; name: string | null } | null } };

describe("PATCH /project defaultFrom", () => {
  it("sets, shows and removes the default sender; one off the project's verified domains is a 422 naming defaultFrom and changes nothing", async () => {
    const s = await sendingSetup();
    expect((await s.request<Settings>("GET", "/project")).body.data.defaultFrom).toBeNull();
    const set = await s.request<Settings>("PATCH", "/project", { defaultFrom: { email: s.from, name: "Ada at Acme" } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data.defaultFrom).toEqual({ email: s.from, name: "Ada at Acme" });

    const refused = await s.request("PATCH", "/project", { defaultFrom: { email: "news@not-verified.example" } });
    expect(expectError(refused, 422, "VALIDATION_ERROR").errors?.[0]?.field).toBe("defaultFrom");
    const badName = await s.request("PATCH", "/project", { defaultFrom: { email: s.from, name: "Ada\r\nBcc: x@example.com" } });
    expectError(badName, 422, "VALIDATION_ERROR");
    expect((await s.request<Settings>("GET", "/project")).body.data.defaultFrom).toEqual({ email: s.from, name: "Ada at Acme" });

    const removed = await s.request<Settings>("PATCH", "/project", { defaultFrom: null });
    expect(removed.body.data.defaultFrom).toBeNull();
  });
});

describe("the default sender on mail that names no from", () => {
  it("/v1/send without from: 422 naming from while the project has none; then sent from the default, its name in the From header", async () => {
    const s = await sendingSetup();
    const before = await s.request("POST", "/v1/send", { to: "ada@example.com", subject: "Hi", body: "<p>Hi</p>" });
    expect(expectError(before, 422, "VALIDATION_ERROR").errors?.map((e) => e.field)).toEqual(["from"]);
    expect(s.queue.messages).toHaveLength(0);

    await s.request("PATCH", "/project", { defaultFrom: { email: s.from, name: "Acme" } });
    const res = await s.send({ to: "ada@example.com", subject: "Hi", body: "<p>Hi</p>" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const email = await s.get<Email>(`/emails/${res.body.data.emails[0].email}`);
    expect(email.body).toMatchObject({ from: s.from, status: "QUEUED" });
    await s.deliver();
    expect(s.ses.calls).toHaveLength(1);
    expect(s.ses.calls[0].mime.headers.from).toContain(s.from);
    expect(decodeWords(s.ses.calls[0].mime.headers.from)).toBe(`Acme <${s.from}>`);

    // A from in the request still wins.
    const own = await s.send({ to: "bob@example.com", subject: "Hi", body: "<p>Hi</p>", from: `other@${s.from.split("@")[1]}` });
    expect((await s.get<Email>(`/emails/${own.body.data.emails[0].email}`)).body.from).toBe(`other@${s.from.split("@")[1]}`);
  });

  it("a template with its own from keeps it; one without takes the default", async () => {
    const s = await sendingSetup();
    await s.request("PATCH", "/project", { defaultFrom: { email: s.from } });
    const domain = s.from.split("@")[1];
    const withFrom = await s.request<{ id: string }>("POST", "/templates", {
      name: "a",
      subject: "A",
      body: "<p>A</p>",
      type: "TRANSACTIONAL",
      from: `team@${domain}`,
    });
    const without = await s.request<{ id: string }>("POST", "/templates", { name: "b", subject: "B", body: "<p>B</p>", type: "TRANSACTIONAL" });
    expect(withFrom.status, JSON.stringify(withFrom.body)).toBe(201);
    expect(without.status, JSON.stringify(without.body)).toBe(201);
    const a = await s.send({ to: "ada@example.com", template: withFrom.body.id });
    const b = await s.send({ to: "ada@example.com", template: without.body.id });
    expect((await s.get<Email>(`/emails/${a.body.data.emails[0].email}`)).body.from).toBe(`team@${domain}`);
    expect((await s.get<Email>(`/emails/${b.body.data.emails[0].email}`)).body.from).toBe(s.from);
  });

  it("a campaign created without from takes the default sender and its name; without a default it is a 422 naming from", async () => {
    const s = await sendingSetup();
    const campaign = { name: "News", subject: "Hi", body: "<p>Hi</p>", audienceType: "ALL" };
    const refused = await s.request("POST", "/campaigns", campaign);
    expect(expectError(refused, 422, "VALIDATION_ERROR").errors?.[0]?.field).toBe("from");
    await s.request("PATCH", "/project", { defaultFrom: { email: s.from, name: "Acme news" } });
    const created = await s.request<CampaignResponse>("POST", "/campaigns", campaign);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data).toMatchObject({ from: s.from, fromName: "Acme news" });
  });
});
