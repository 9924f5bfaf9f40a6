/** GET /inbound and its reads over HTTP: pages, filters, validation and 404s (issue 37). */
import { describe, expect, it } from "vitest";
import gmail from "../fixtures/inbound/gmail-reply.eml?raw";
import outOfOffice from "../fixtures/inbound/out-of-office.eml?raw";
import { namedAddress } from "../../src/services/inbound/receive";
import { expectError } from "../support/http";
import { fill, INBOUND_DOMAIN, inboundSetup } from "../services/inbound/harness";

describe("GET /inbound", () => {
  it("pages newest first with the one cursor, and filters by email and contact", async () => {
    const s = await inboundSetup();
    const sent = await s.sendTo("ada@example.com");
    const named = namedAddress("help", s.project.id, INBOUND_DOMAIN);
    await s.receive({ from: "ada@example.com", to: sent.replyTo, raw: fill(gmail, { to: sent.replyTo, from: "ada@example.com" }) });
    await s.receive({ from: "zed@example.net", to: named, raw: fill(gmail, { to: named, from: "zed@example.net" }) });
    await s.receive({ from: "ada@example.com", to: named, raw: fill(gmail, { to: named, from: "ada@example.com" }) });
    await s.parse();

    const first = await s.list("?limit=2");
    expect(first.total).toBe(3);
    expect(first.items.map((i) => i.from)).toEqual(["ada@example.com", "zed@example.net"]);
    const second = await s.list(`?limit=2&cursor=${first.nextCursor}`);
    expect(second.items.map((i) => [i.from, i.match])).toEqual([["ada@example.com", "TOKEN"]]);
    expect(second.nextCursor).toBeNull();

    expect((await s.list(`?emailId=${sent.emailId}`)).items.map((i) => i.to)).toEqual([sent.replyTo]);
    expect((await s.list(`?contactId=${sent.contactId}`)).total).toBe(2);
    expect((await s.list(`?contactId=${crypto.randomUUID()}`)).total).toBe(0);
  });

  it("a malformed cursor or limit is a 422 naming the field", async () => {
    const s = await inboundSetup();
    const cursor = expectError(await s.get("/inbound?cursor=not-a-cursor"), 422, "VALIDATION_ERROR");
    expect(cursor.errors?.[0].field).toBe("cursor");
    const limit = expectError(await s.get("/inbound?limit=1000"), 422, "VALIDATION_ERROR");
    expect(limit.errors?.[0].field).toBe("limit");
  });

  it("an unknown message is 404; the replies of an unknown or another project's email are 404", async () => {
    // Each setup fakes SES at the fetch boundary: the other project sends before this one is made.
    const other = await inboundSetup();
    const theirs = await other.sendTo("ada@example.com");
    const s = await inboundSetup();
    expectError(await s.get(`/inbound/${crypto.randomUUID()}`), 404, "NOT_FOUND");
    expectError(await s.get(`/emails/${crypto.randomUUID()}/replies`), 404, "NOT_FOUND");
    expectError(await s.get(`/emails/${theirs.emailId}/replies`), 404, "NOT_FOUND");
    const mine = await s.sendTo("ada@example.com");
    const replies = await s.get<{ data: { items: unknown[]; total: number } }>(`/emails/${mine.emailId}/replies`);
    expect(replies.status).toBe(200);
    expect(replies.body.data).toMatchObject({ items: [], total: 0 });
  });

  it("is in the OpenAPI document with its reads", async () => {
    const s = await inboundSetup();
    const doc = await s.get<{ paths: Record<string, unknown> }>("/openapi.json");
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining(["/inbound", "/inbound/{id}", "/inbound/{id}/raw", "/inbound/{id}/attachments/{n}", "/inbound/{id}/html", "/emails/{id}/replies"]),
    );
  });
});

describe("GET /inbound/{id}/html", () => {
  it("answers the message's HTML part as the sender wrote it, sandboxed by its CSP; a message without one is 404", async () => {
    const s = await inboundSetup();
    const named = namedAddress("help", s.project.id, INBOUND_DOMAIN);
    await s.receive({ from: "ada@example.com", to: named, raw: fill(gmail, { to: named, from: "ada@example.com" }) });
    await s.receive({ from: "bob@example.com", to: named, raw: fill(outOfOffice, { to: named, from: "bob@example.com" }) });
    await s.parse();
    const [plain, html] = (await s.list()).items;
    const res = await s.get<string>(`/inbound/${html.id}/html`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("content-security-policy")).toMatch(/^sandbox; default-src 'none'/);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.body).toContain('<div dir="ltr">Thanks, that works for me!');
    expectError(await s.get(`/inbound/${plain.id}/html`), 404, "NOT_FOUND");
  });
});
