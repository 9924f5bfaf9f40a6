import { describe, expect, it } from "vitest";
import { call, newProject } from "../support/http";
import type { OpenApiDoc } from "../support/api";

/**
 * API responses carry a project's data: `Cache-Control: no-store` on every one
 * (success, error, the CSV export), while the API reference and the dashboard
 * shell keep their own caching.
 */
const ZERO_ID = "00000000-0000-7000-8000-000000000000";

describe("Cache-Control: no-store on API responses", () => {
  it("is on every documented operation's answer, whatever its status, with a secret key", async () => {
    const p = await newProject("no-store");
    const doc = await call<OpenApiDoc>("GET", "/openapi.json");
    const seen: string[] = [];
    for (const [template, item] of Object.entries(doc.body.paths)) {
      for (const method of Object.keys(item).filter((m) => ["get", "post", "put", "patch", "delete"].includes(m))) {
        const res = await call(method.toUpperCase(), template.replace(/\{[^}]+\}/g, ZERO_ID), {
          key: p.secretKey,
          body: method === "get" ? undefined : {},
          binary: true,
        });
        seen.push(
          `${method.toUpperCase()} ${template} ${res.status} ${/no-store/.test(res.headers.get("Cache-Control") ?? "") ? "no-store" : res.headers.get("Cache-Control")}`,
        );
      }
    }
    expect(seen.length).toBeGreaterThan(60);
    expect(seen.filter((line) => !line.endsWith(" no-store"))).toEqual([]);
  });

  it("is exactly no-store on a JSON list, the CSV export, a 401, a 422 and an unknown route; a route's own Cache-Control is kept", async () => {
    const p = await newProject("no-store-2");
    expect((await call("POST", "/contacts", { key: p.secretKey, body: { email: "a@example.com" } })).status).toBe(201);
    const answers = {
      list: await call("GET", "/contacts", { key: p.secretKey }),
      export: await call("GET", "/contacts/export", { key: p.secretKey }),
      unauthorized: await call("GET", "/contacts"),
      invalid: await call("POST", "/contacts", { key: p.secretKey, body: { email: "not an address" } }),
      unknown: await call("GET", "/nowhere", { key: p.secretKey }),
      health: await call("GET", "/health"),
    };
    expect(Object.fromEntries(Object.entries(answers).map(([name, res]) => [name, [res.status, res.headers.get("Cache-Control")]]))).toEqual({
      list: [200, "no-store"],
      export: [200, "no-store"],
      unauthorized: [401, "no-store"],
      invalid: [422, "no-store"],
      unknown: [404, "no-store"],
      health: [200, "no-store"],
    });
    expect(answers.export.headers.get("Content-Type")).toMatch(/^text\/csv/);
    // The open pixel sets its own, longer no-cache line; it is not replaced.
    expect((await call("GET", `/t/o/${ZERO_ID}`, { binary: true })).headers.get("Cache-Control")).toBe(
      "no-store, no-cache, must-revalidate, private, max-age=0",
    );
  });

  it("is not added to the API reference or the dashboard shell, which have their own caching", async () => {
    const docs = await call("GET", "/docs");
    const spec = await call("GET", "/openapi.json");
    const app = await call("GET", "/app/contacts");
    expect([docs.status, spec.status, app.status]).toEqual([200, 200, 200]);
    expect(docs.headers.get("Cache-Control")).toBeNull();
    expect(spec.headers.get("Cache-Control")).toBeNull();
    expect(app.headers.get("Cache-Control")).toBe("no-cache");
  });
});
