import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createApp, MAX_BODY_BYTES } from "../src/app";
import { call, expectError, newProject } from "./support/http";
import type { Contact, ContactList, OpenApiDoc, UpsertedContact } from "./support/api";
import { d1Outage } from "./fakes/d1-outage";

/** Routes deliberately left out of the API reference, with the reason. */
const UNDOCUMENTED = [
  { pattern: /^\/(openapi\.json|docs)$/, why: "the reference itself" },
  { pattern: /^\/dev\//, why: "local-only development helpers (ENVIRONMENT=development)" },
  { pattern: /^\/app$/, why: "the dashboard page (a web app, not an API operation)" },
];

/** Every concrete route the app registers, as "METHOD /path/{param}". */
async function registeredRoutes(): Promise<string[]> {
  const routes = new Set<string>();
  for (const route of (await everyRoute()).routes) {
    if (route.method === "ALL" || route.path.includes("*")) continue; // middleware
    if (UNDOCUMENTED.some((u) => u.pattern.test(route.path))) continue;
    routes.add(`${route.method} ${route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`);
  }
  return [...routes].sort();
}

/** The app of every route (the one /openapi.json is served from). */
const everyRoute = () => createApp().appFor("/openapi.json");

describe("GET /health", () => {
  it("answers without a key", async () => {
    const res = await call<{ status: "ok"; timestamp: string }>("GET", "/health");
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("ok");
    expect(Date.parse(res.body.timestamp)).not.toBeNaN();
    expect(res.headers.get("RateLimit-Limit")).toBeNull();
  });

  it("answers even when D1 is unusable (it never touches the database)", async () => {
    const broken = d1Outage({ down: true, message: "D1 is down" });
    const brokenEnv = { ...env, DB: broken };
    const health = await call<{ status: string }>("GET", "/health", { env: brokenEnv });
    expect(health.status).toBe(200);
    expect(health.body.status).toBe("ok");
    // The same broken database does break an authenticated route (so the probe is real), as a 500 envelope.
    const p = await newProject();
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const contacts = await call<{ error: { code: string; message: string } }>("GET", "/contacts", { key: p.secretKey, env: brokenEnv });
    expect(contacts.status).toBe(500);
    const body = contacts.body;
    expect(body.error.code).toBe("INTERNAL_ERROR");
    expect(body.error.message).not.toContain("D1 is down");
    expect(logged).toHaveBeenCalled(); // the real cause goes to the logs, not to the client
    logged.mockRestore();
  });
});

describe("errors from the HTTP layer", () => {
  it("unknown routes and methods get the 404 envelope", async () => {
    const p = await newProject();
    expectError(await call("GET", "/nope"), 404, "NOT_FOUND");
    expectError(await p.api.get("/v2/contacts"), 404, "NOT_FOUND");
    expectError(await p.api.put("/contacts/abc", { subscribed: true }), 404, "NOT_FOUND");
    expectError(await call("GET", "/"), 404, "NOT_FOUND");
  });

  it("malformed JSON is 400 INVALID_JSON and writes nothing", async () => {
    const p = await newProject();
    for (const raw of ["{", '{"email": "a@b.co",}', "not json", "'single'", '{"email":"a@b.co"} trailing']) {
      const res = await call("POST", "/contacts", {
        key: p.secretKey,
        rawBody: raw,
        headers: { "Content-Type": "application/json" },
      });
      expectError(res, 400, "INVALID_JSON");
    }
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "x@example.com" });
    const patch = await call<Contact>("PATCH", `/contacts/${created.body.id}`, {
      key: p.secretKey,
      rawBody: "{",
      headers: { "Content-Type": "application/json" },
    });
    expectError(patch, 400, "INVALID_JSON");
    expect((await p.api.get<ContactList>("/contacts")).body.total).toBe(1);
  });

  it("a non-JSON content type (or none) is 400", async () => {
    const p = await newProject();
    for (const headers of [{ "Content-Type": "text/plain" }, { "Content-Type": "application/x-www-form-urlencoded" }, {}] as Record<string, string>[]) {
      const res = await call("POST", "/contacts", { key: p.secretKey, rawBody: '{"email":"t@example.com"}', headers });
      const err = expectError(res, 400);
      expect(["UNSUPPORTED_MEDIA_TYPE", "INVALID_JSON"]).toContain(err.code);
    }
    expect((await p.api.get<ContactList>("/contacts")).body.total).toBe(0);
  });

  it("a body over 1 MB is 413 PAYLOAD_TOO_LARGE, with or without Content-Length", async () => {
    const p = await newProject();
    const big = JSON.stringify({ email: "big@example.com", data: { blob: "x".repeat(MAX_BODY_BYTES) } });
    expectError(await call("POST", "/contacts", { key: p.secretKey, rawBody: big, headers: { "Content-Type": "application/json" } }), 413, "PAYLOAD_TOO_LARGE");

    // Streamed (chunked) body: no Content-Length to trust.
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === 0) controller.enqueue(new TextEncoder().encode('{"email":"big@example.com","data":{"blob":"'));
        if (sent > MAX_BODY_BYTES + chunk.length) {
          controller.enqueue(new TextEncoder().encode('"}}'));
          controller.close();
          return;
        }
        controller.enqueue(chunk);
        sent += chunk.length;
      },
    });
    const streamed = await call("POST", "/contacts", { key: p.secretKey, rawBody: stream, headers: { "Content-Type": "application/json" } });
    expectError(streamed, 413, "PAYLOAD_TOO_LARGE");
    expect((await p.api.get<ContactList>("/contacts")).body.total).toBe(0);

    // Just under the limit is not a 413 (it is judged on its content instead).
    const under = JSON.stringify({ email: "u@example.com", data: { blob: "x".repeat(MAX_BODY_BYTES - 100) } });
    const res = await call("POST", "/contacts", { key: p.secretKey, rawBody: under, headers: { "Content-Type": "application/json" } });
    expectError(res, 422, "VALIDATION_ERROR");
  });
});

describe("API reference", () => {
  it("GET /openapi.json is OpenAPI 3.1 and documents every registered route with its 4xx responses", async () => {
    const res = await call<OpenApiDoc>("GET", "/openapi.json");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/application\/json/);
    const doc = res.body;
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.title).toBeTruthy();

    const documented = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    const registered = await registeredRoutes();
    expect(registered).toEqual(
      expect.arrayContaining(["GET /health", "GET /contacts", "POST /contacts", "GET /contacts/{id}", "PATCH /contacts/{id}", "DELETE /contacts/{id}"]),
    );
    expect(registered.filter((r) => !documented.has(r))).toEqual([]);

    for (const route of registered) {
      const [method, path] = route.split(" ");
      const op = doc.paths[path][method.toLowerCase()];
      const statuses = Object.keys(op.responses);
      expect(
        statuses.some((s) => /^2/.test(s) || /^3/.test(s)),
        route,
      ).toBe(true);
      if (op.security?.length) {
        // Every keyed route documents the auth, validation and rate-limit errors in the envelope.
        expect(statuses, route).toEqual(expect.arrayContaining(["401", "403", "422", "429"]));
        expect(JSON.stringify(op.responses["401"].content!["application/json"].schema)).toContain("#/components/schemas/Error");
      }
      if (op.parameters?.some((p) => p.in === "path") && op.security?.length) {
        expect(statuses, route).toContain("404");
      }
    }
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.components.schemas.Error.properties!.error.properties!.requestId).toBeTruthy();
  });

  it("GET /docs is an HTML reference page that loads /openapi.json", async () => {
    const res = await call("GET", "/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/text\/html/);
    expect(typeof res.body).toBe("string");
    expect(res.body).toMatch(/<html/i);
    expect(res.body).toContain("/openapi.json");
  });

  it("GET /docs loads its UI only from this origin (static assets), under a CSP that allows nothing else", async () => {
    const res = await call("GET", "/docs");
    const csp = res.headers.get("Content-Security-Policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    const urls = [...(res.body as string).matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(urls.length).toBeGreaterThanOrEqual(3);
    for (const url of urls) expect(url, url).toMatch(/^\/[^/]/);
    expect(res.body).not.toMatch(/<script>|<script [^>]*>[^<]/); // no inline script
    // The files themselves come from Workers static assets, which this pool does not serve: test/browser/docs.browser.test.ts loads them.
  });
});

describe("route groups (each built on its first request)", () => {
  type Route = { method: string; path: string };
  const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
  const pattern = (path: string) =>
    new RegExp(
      `^${path
        .replace(/:[A-Za-z0-9_]+/g, "[^/]+")
        .replace(/\/\*$/, "(?:/.*)?")
        .replace(/\*/g, ".*")}$`,
    );
  /** What runs for `method path`, in order: every middleware and route whose pattern matches it. */
  const chain = (routes: Route[], method: string, path: string) =>
    routes.filter((r) => (r.method === "ALL" || r.method === method) && pattern(r.path).test(path)).map((r) => `${r.method} ${r.path}`);

  it("every path meets the same middleware and routes, in the same order, as in the app of every route", async () => {
    const all = await everyRoute();
    const lazy = createApp();
    // Each route's own path, and paths beside them that no route or only a neighbour's route matches.
    const paths = new Set([
      "/",
      "/nope",
      "/v1",
      "/v1/other",
      "/contacts/",
      "/contacts/imports/x/y",
      "/contacts/exports",
      "/webhooks/ses/x",
      "/app/x/y",
      "/t/x",
    ]);
    for (const r of all.routes) paths.add(r.path.replace(/:[A-Za-z0-9_]+/g, "x").replace(/\*/g, "x"));
    let compared = 0;
    for (const path of paths) {
      const group = await lazy.appFor(path);
      for (const method of METHODS) {
        const expected = chain(all.routes, method, path);
        expect(chain(group.routes, method, path), `${method} ${path}`).toEqual(expected);
        if (expected.some((r) => !r.startsWith("ALL "))) compared++;
      }
    }
    expect(compared).toBeGreaterThan(80);
  });

  it("answers as the app of every route does: 404s, wrong methods, neighbouring routes, CORS preflight", async () => {
    const p = await newProject();
    const all = await everyRoute();
    const requests: [string, string, Record<string, string>?][] = [
      ["GET", "/nope"],
      ["GET", "/v1/other"],
      ["DELETE", "/contacts/imports", { Authorization: `Bearer ${p.secretKey}` }],
      ["GET", "/contacts/imports", { Authorization: `Bearer ${p.secretKey}` }],
      ["GET", "/contacts/export", { Authorization: `Bearer ${p.secretKey}` }],
      ["PUT", "/contacts/abc", { Authorization: `Bearer ${p.secretKey}` }],
      ["GET", "/contacts/x/y"],
      ["GET", "/webhooks/ses"],
      ["GET", "/webhooks", { Authorization: `Bearer ${p.publicKey}` }],
      ["OPTIONS", "/v1/track", { Origin: "https://site.example", "Access-Control-Request-Method": "POST" }],
      ["POST", "/v1/send"],
      ["GET", "/health"],
    ];
    // Both apps count in the same project window: RateLimit-Remaining differs by the other's requests.
    const headersSeen = (res: Response) =>
      [...res.headers]
        .filter(([name]) => !["x-request-id", "ratelimit-remaining", "ratelimit-reset", "date"].includes(name))
        .sort(([a], [b]) => a.localeCompare(b));
    const bodySeen = (text: string) => text.replace(/"(requestId|timestamp)":"[^"]*"/g, "");
    for (const [method, path, headers] of requests) {
      const lazy = createApp();
      const request = () => new Request(`http://edge-mail.test${path}`, { method, headers });
      const [expected, got] = [await all.fetch(request(), env), await lazy.fetch(request(), env)];
      expect(got.status, `${method} ${path}`).toBe(expected.status);
      expect(headersSeen(got), `${method} ${path}`).toEqual(headersSeen(expected));
      expect(bodySeen(await got.text()), `${method} ${path}`).toBe(bodySeen(await expected.text()));
    }
  });

  it("a request builds its own group only; /openapi.json builds every route", async () => {
    const p = await newProject();
    const app = createApp();
    expect((await call("GET", "/health", { handler: app.fetch })).status).toBe(200);
    expect(app.built()).toEqual(["health"]);
    expect((await call("GET", "/contacts", { key: p.secretKey, handler: app.fetch })).status).toBe(200);
    expect((await call("GET", "/contacts/abc", { key: p.secretKey, handler: app.fetch })).status).toBe(404);
    expect(app.built()).toEqual(["health", "contacts"]);
    expect((await call("GET", "/openapi.json", { handler: app.fetch })).status).toBe(200);
    expect(app.built()).toHaveLength(3);
    expect(app.built()[2].split(",")).toEqual(expect.arrayContaining(["health", "contacts", "send", "webhooks", "docs"]));
  });
});
