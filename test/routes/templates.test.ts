import { describe, expect, it } from "vitest";
import { call, expectError, type JsonResponse, newProject } from "../support/http";
import type { z } from "@hono/zod-openapi";
import type { TemplateListResponseSchema, TemplateSchema } from "../../src/schemas/templates";

type TemplateList = z.infer<typeof TemplateListResponseSchema>;
type Template = z.infer<typeof TemplateSchema>;

const welcome = {
  name: "Welcome",
  subject: "Welcome, {{firstName ?? friend}}",
  body: "<p>Hello {{firstName}}</p>",
  type: "TRANSACTIONAL",
};

describe("POST /templates", () => {
  it("creates a template (201) and returns the bare object with nullable sender fields", async () => {
    const p = await newProject();
    const res = await p.api.post<Template>("/templates", welcome);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      ...welcome,
      from: null,
      fromName: null,
      replyTo: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect("success" in res.body).toBe(false);
    expect(Date.parse(res.body.createdAt)).not.toBeNaN();
  });

  it("stores from (lower-cased), fromName and replyTo for later sends", async () => {
    const p = await newProject();
    const res = await p.api.post<Template>("/templates", {
      ...welcome,
      type: "MARKETING",
      from: "News@Example.com",
      fromName: "Example News",
      replyTo: "help@example.com",
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ type: "MARKETING", from: "news@example.com", fromName: "Example News", replyTo: "help@example.com" });
    const fetched = await p.api.get<Template>(`/templates/${res.body.id}`);
    expect(fetched.body).toEqual(res.body);
  });

  it("accepts a body of exactly 512 KB and rejects one byte more with 422", async () => {
    const p = await newProject();
    const max = 512 * 1024;
    const ok = await p.api.post<Template>("/templates", { ...welcome, body: "a".repeat(max) });
    expect(ok.status).toBe(201);
    expect(ok.body.body).toHaveLength(max);
    const tooBig = expectError(await p.api.post<Template>("/templates", { ...welcome, body: "a".repeat(max + 1) }), 422, "VALIDATION_ERROR");
    expect(tooBig.errors!.map((e) => e.field)).toEqual(["body"]);
  });

  it("counts the body limit in bytes, not characters", async () => {
    const p = await newProject();
    // "é" is two bytes in UTF-8: 300k of them is under 512k characters but over 512 KB.
    const err = expectError(await p.api.post<Template>("/templates", { ...welcome, body: "é".repeat(300_000) }), 422);
    expect(err.errors!.map((e) => e.field)).toEqual(["body"]);
  });

  it("422 lists one error per bad field", async () => {
    const p = await newProject();
    const err = expectError(
      await p.api.post<Template>("/templates", { name: "", subject: 42, type: "NEWSLETTER", from: "not-an-email", replyTo: "also bad" }),
      422,
      "VALIDATION_ERROR",
    );
    expect(err.errors!.map((e) => e.field).sort()).toEqual(["body", "from", "name", "replyTo", "subject", "type"]);
    for (const item of err.errors!) {
      expect(typeof item.message).toBe("string");
      expect(typeof item.code).toBe("string");
    }
    expect((await p.api.get<TemplateList>("/templates")).body.data.total).toBe(0);
  });

  it.each([
    ["CRLF in subject", { subject: "Hi\r\nBcc: victim@example.com" }, "subject"],
    ["LF in subject", { subject: "Hi\nthere" }, "subject"],
    ["trailing CR in subject", { subject: "Hi\r" }, "subject"],
    ["null byte in subject", { subject: "Hi\u0000" }, "subject"],
    ["CRLF in fromName", { fromName: "Ada\r\nBcc: victim@example.com" }, "fromName"],
    ["subject over 998 characters", { subject: "s".repeat(999) }, "subject"],
    ["name over 200 characters", { name: "n".repeat(201) }, "name"],
    ["blank name", { name: "   " }, "name"],
    ["empty body", { body: "" }, "body"],
  ])("rejects %s with 422 on that field", async (_label, override, field) => {
    const p = await newProject();
    const err = expectError(await p.api.post<Template>("/templates", { ...welcome, ...override }), 422, "VALIDATION_ERROR");
    expect(err.errors!.map((e) => e.field)).toEqual([field]);
    expect((await p.api.get<TemplateList>("/templates")).body.data.total).toBe(0);
  });

  it("accepts names and subjects at their length limits", async () => {
    const p = await newProject();
    const res = await p.api.post<Template>("/templates", { ...welcome, name: "n".repeat(200), subject: "s".repeat(998) });
    expect(res.status).toBe(201);
    expect(res.body.name).toHaveLength(200);
    expect(res.body.subject).toHaveLength(998);
  });

  it("422 for a subject or body that cannot render (template syntax), on create and update", async () => {
    const p = await newProject();
    const bad = expectError(await p.api.post<Template>("/templates", { ...welcome, body: "<p>{% if x %}never closed</p>" }), 422);
    expect(bad.errors!.map((e) => e.field)).toEqual(["body"]);
    const created = await p.api.post<Template>("/templates", welcome);
    const patched = expectError(await p.api.patch<Template>(`/templates/${created.body.id}`, { subject: "Hi {{ name | nosuchfilter }}" }), 422);
    expect(patched.errors!.map((e) => e.field)).toEqual(["subject"]);
    expect((await p.api.get<Template>(`/templates/${created.body.id}`)).body.subject).toBe(welcome.subject);
    expect((await p.api.get<TemplateList>("/templates")).body.data.total).toBe(1);
  });

  it("400 for malformed JSON and for a non-JSON content type", async () => {
    const p = await newProject();
    const bad = await call("POST", "/templates", {
      key: p.secretKey,
      rawBody: '{"name": "Welcome",',
      headers: { "Content-Type": "application/json" },
    });
    expectError(bad, 400, "INVALID_JSON");
    const text = await call("POST", "/templates", {
      key: p.secretKey,
      rawBody: JSON.stringify(welcome),
      headers: { "Content-Type": "text/plain" },
    });
    expectError(text, 400);
    expect((await p.api.get<TemplateList>("/templates")).body.data.total).toBe(0);
  });

  it("422 for a JSON body that is not an object", async () => {
    const p = await newProject();
    expectError(await p.api.post<Template>("/templates", [welcome]), 422, "VALIDATION_ERROR");
    expectError(await p.api.post<Template>("/templates", "Welcome"), 422, "VALIDATION_ERROR");
  });
});

describe("GET /templates/{id}", () => {
  it("404 for an unknown id and for another project's template", async () => {
    const a = await newProject("A");
    const b = await newProject("B");
    const created = await a.api.post<Template>("/templates", welcome);
    expectError(await a.api.get("/templates/0190f0a4-0000-7000-8000-000000000000"), 404, "NOT_FOUND");
    expectError(await b.api.get<Template>(`/templates/${created.body.id}`), 404, "NOT_FOUND");
    expect((await a.api.get<Template>(`/templates/${created.body.id}`)).status).toBe(200);
  });
});

describe("PATCH /templates/{id}", () => {
  it("changes only the given fields and bumps updatedAt", async () => {
    const p = await newProject();
    const created = await p.api.post<Template>("/templates", { ...welcome, from: "hi@example.com" });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const res = await p.api.patch<Template>(`/templates/${created.body.id}`, { subject: "New subject", type: "MARKETING" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: created.body.id,
      name: welcome.name,
      body: welcome.body,
      subject: "New subject",
      type: "MARKETING",
      from: "hi@example.com",
      createdAt: created.body.createdAt,
    });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThan(Date.parse(created.body.updatedAt));
    expect((await p.api.get<Template>(`/templates/${created.body.id}`)).body).toEqual(res.body);
  });

  it("with an empty object returns the template unchanged", async () => {
    const p = await newProject();
    const created = await p.api.post<Template>("/templates", welcome);
    const res = await p.api.patch<Template>(`/templates/${created.body.id}`, {});
    expect(res.status).toBe(200);
    expect(res.body).toEqual(created.body);
  });

  it("clears from, fromName and replyTo with null", async () => {
    const p = await newProject();
    const created = await p.api.post<Template>("/templates", {
      ...welcome,
      from: "hi@example.com",
      fromName: "Example",
      replyTo: "help@example.com",
    });
    const res = await p.api.patch<Template>(`/templates/${created.body.id}`, { from: null, fromName: null, replyTo: null });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ from: null, fromName: null, replyTo: null, subject: welcome.subject });
  });

  it("does not allow null for required fields, and validates like create", async () => {
    const p = await newProject();
    const created = await p.api.post<Template>("/templates", welcome);
    const err = expectError(
      await p.api.patch<Template>(`/templates/${created.body.id}`, { name: null, subject: "a\r\nb", type: "OTHER", fromName: "x\ny" }),
      422,
      "VALIDATION_ERROR",
    );
    expect(err.errors!.map((e) => e.field).sort()).toEqual(["fromName", "name", "subject", "type"]);
    expect((await p.api.get<Template>(`/templates/${created.body.id}`)).body).toEqual(created.body);
  });

  it("404 for an unknown id and for another project's template, which stays unchanged", async () => {
    const a = await newProject("A");
    const b = await newProject("B");
    const created = await a.api.post<Template>("/templates", welcome);
    expectError(await a.api.patch("/templates/nope", { name: "x" }), 404, "NOT_FOUND");
    expectError(await b.api.patch<Template>(`/templates/${created.body.id}`, { name: "hijacked" }), 404, "NOT_FOUND");
    expectError(await b.api.patch<Template>(`/templates/${created.body.id}`, {}), 404, "NOT_FOUND");
    expect((await a.api.get<Template>(`/templates/${created.body.id}`)).body.name).toBe(welcome.name);
  });
});

describe("DELETE /templates/{id}", () => {
  it("deletes (204, empty body); then the id is 404", async () => {
    const p = await newProject();
    const created = await p.api.post<Template>("/templates", welcome);
    const res = await p.api.delete(`/templates/${created.body.id}`);
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
    expectError(await p.api.get<Template>(`/templates/${created.body.id}`), 404);
    expectError(await p.api.delete(`/templates/${created.body.id}`), 404);
  });

  it("404 for another project's template, which survives", async () => {
    const a = await newProject("A");
    const b = await newProject("B");
    const created = await a.api.post<Template>("/templates", welcome);
    expectError(await b.api.delete(`/templates/${created.body.id}`), 404, "NOT_FOUND");
    expect((await a.api.get<Template>(`/templates/${created.body.id}`)).status).toBe(200);
  });
});

describe("GET /templates", () => {
  it("lists newest first in the general list shape and pages with nextCursor", async () => {
    const p = await newProject();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await p.api.post<Template>("/templates", { ...welcome, name: `T${i}` })).body.id);

    const first = await p.api.get<TemplateList>("/templates?limit=2");
    expect(first.status).toBe(200);
    expect(first.body.success).toBe(true);
    expect(first.body.data).toMatchObject({ hasMore: true, total: 5 });
    expect(first.body.data.items.map((t) => t.name)).toEqual(["T4", "T3"]);
    expect(typeof first.body.data.nextCursor).toBe("string");

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: JsonResponse<TemplateList> = await p.api.get<TemplateList>(`/templates?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.body.data.total).toBe(5);
      seen.push(...page.body.data.items.map((t) => t.id));
      cursor = page.body.data.nextCursor;
      if (!page.body.data.hasMore) expect(cursor).toBeNull();
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
  });

  it("an empty project has an empty list", async () => {
    const p = await newProject();
    const res = await p.api.get<TemplateList>("/templates");
    expect(res.body).toEqual({ success: true, data: { items: [], nextCursor: null, hasMore: false, total: 0 } });
  });

  it("never shows another project's templates", async () => {
    const a = await newProject("A");
    const b = await newProject("B");
    await a.api.post<Template>("/templates", welcome);
    await b.api.post<Template>("/templates", { ...welcome, name: "B's" });
    const listB = await b.api.get<TemplateList>("/templates");
    expect(listB.body.data.total).toBe(1);
    expect(listB.body.data.items.map((t) => t.name)).toEqual(["B's"]);
  });

  it("422 for a bad limit or cursor", async () => {
    const p = await newProject();
    expect(expectError(await p.api.get<TemplateList>("/templates?limit=0"), 422).errors![0].field).toBe("limit");
    expect(expectError(await p.api.get<TemplateList>("/templates?limit=101"), 422).errors![0].field).toBe("limit");
    expect(expectError(await p.api.get<TemplateList>("/templates?limit=abc"), 422).errors![0].field).toBe("limit");
    expect(expectError(await p.api.get<TemplateList>("/templates?cursor=%%%"), 422).errors![0].field).toBe("cursor");
  });
});

describe("templates auth", () => {
  it("401 for a missing, malformed or unknown key", async () => {
    expectError(await call("GET", "/templates"), 401, "UNAUTHORIZED");
    expectError(await call("GET", "/templates", { headers: { Authorization: "Bearer nope" } }), 401, "UNAUTHORIZED");
    expectError(await call("POST", "/templates", { key: `sk_${"0".repeat(48)}`, body: welcome }), 401, "UNAUTHORIZED");
  });

  it("403 for a public key on every templates endpoint", async () => {
    const p = await newProject();
    const created = await p.api.post<Template>("/templates", welcome);
    expectError(await p.publicApi.get("/templates"), 403, "FORBIDDEN");
    expectError(await p.publicApi.post("/templates", welcome), 403, "FORBIDDEN");
    expectError(await p.publicApi.get(`/templates/${created.body.id}`), 403, "FORBIDDEN");
    expectError(await p.publicApi.patch(`/templates/${created.body.id}`, { name: "x" }), 403, "FORBIDDEN");
    expectError(await p.publicApi.delete(`/templates/${created.body.id}`), 403, "FORBIDDEN");
    const after = await p.api.get<Template>(`/templates/${created.body.id}`);
    expect(after.body).toEqual(created.body);
    expect((await p.api.get<TemplateList>("/templates")).body.data.total).toBe(1);
  });
});
