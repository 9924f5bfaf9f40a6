import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { buildKeyRotation, buildSetProjectDisabled } from "../../src/services/projects";
import { call, expectError, newProject } from "../helpers";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PUBLIC_PATHS = new Set(["/health", "/v1/track"]);

/** Every documented operation, with `{param}` segments filled in. */
async function documentedOperations() {
  const doc = await call("GET", "/openapi.json");
  expect(doc.status).toBe(200);
  const ops: { method: string; path: string; template: string }[] = [];
  for (const [template, item] of Object.entries<Record<string, any>>(doc.body.paths)) {
    for (const [method, operation] of Object.entries<any>(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      // Only operations documented as needing a key (public pages such as /health declare no security).
      if (!operation.security?.length) continue;
      ops.push({ method: method.toUpperCase(), template, path: template.replace(/\{[^}]+\}/g, "00000000-0000-7000-8000-000000000000") });
    }
  }
  return ops;
}

describe("401 for a missing, malformed or unknown key", () => {
  it.each([
    ["no header", undefined],
    ["Basic scheme", "Basic x"],
    ["Bearer without a key", "Bearer"],
    ["Bearer and a space", "Bearer "],
    ["a key without a prefix", `Bearer ${"a".repeat(48)}`],
    ["a key that is too short", "Bearer sk_abc123"],
    ["upper-case hex", `Bearer sk_${"A".repeat(48)}`],
    ["an unknown prefix", `Bearer xk_${"a".repeat(48)}`],
    ["two keys", `Bearer sk_${"a".repeat(48)} sk_${"b".repeat(48)}`],
    ["a well-formed unknown secret key", `Bearer sk_${"0".repeat(48)}`],
    ["a well-formed unknown public key", `Bearer pk_${"0".repeat(48)}`],
  ])("%s", async (_name, header) => {
    const headers: Record<string, string> = header === undefined ? {} : { Authorization: header };
    const res = await call("GET", "/contacts", { headers });
    expectError(res, 401, "UNAUTHORIZED");
    expect(res.headers.get("RateLimit-Limit")).toBeNull();
    const post = await call("POST", "/contacts", { headers, body: { email: "x@example.com" } });
    expectError(post, 401, "UNAUTHORIZED");
  });

  it("a secret key with its prefix swapped to pk_ is unknown", async () => {
    const p = await newProject();
    expectError(await call("POST", "/v1/track", { key: p.secretKey.replace(/^sk_/, "pk_"), body: { email: "a@b.co", event: "x" } }), 401);
    expectError(await call("GET", "/contacts", { key: p.publicKey.replace(/^pk_/, "sk_") }), 401, "UNAUTHORIZED");
  });

  it("after a key rotation the old keys are refused and the new ones work", async () => {
    const p = await newProject();
    const contact = await p.api.post("/contacts", { email: "kept@example.com" });
    expect(contact.status).toBe(201);
    const db = getDb(env.DB);
    const rotation = await buildKeyRotation(db, p.id);
    await db.batch(rotation.queries);

    expectError(await p.api.get("/contacts"), 401, "UNAUTHORIZED");
    expectError(await p.publicApi.post("/v1/track", { email: "a@example.com", event: "signup" }), 401, "UNAUTHORIZED");

    const fresh = await call("GET", `/contacts/${contact.body.id}`, { key: rotation.secretKey });
    expect(fresh.status).toBe(200);
    expect(fresh.body.email).toBe("kept@example.com");
    // The new public key authenticates, but is still only good for /v1/track.
    expectError(await call("GET", "/contacts", { key: rotation.publicKey }), 403, "FORBIDDEN");
  });
});

describe("403", () => {
  it("a disabled project gets PROJECT_DISABLED on every endpoint, /v1/track included, with either key", async () => {
    const p = await newProject();
    const contact = await p.api.post("/contacts", { email: "before@example.com" });
    await buildSetProjectDisabled(getDb(env.DB), p.id, true);

    const ops = await documentedOperations();
    const targets = [...ops];
    if (!targets.some((op) => op.path === "/v1/track")) targets.push({ method: "POST", path: "/v1/track", template: "/v1/track" });
    expect(targets.length).toBeGreaterThanOrEqual(5);
    for (const op of targets) {
      const body = op.method === "POST" || op.method === "PATCH" || op.method === "PUT" ? { email: "x@example.com", event: "e" } : undefined;
      expectError(await call(op.method, op.path, { key: p.secretKey, body }), 403, "PROJECT_DISABLED");
    }
    expectError(await p.publicApi.post("/v1/track", { email: "x@example.com", event: "e" }), 403, "PROJECT_DISABLED");
    expectError(await p.api.get(`/contacts/${contact.body.id}`), 403, "PROJECT_DISABLED");

    // Re-enabled: it works again and nothing was written while disabled.
    await buildSetProjectDisabled(getDb(env.DB), p.id, false);
    const list = await p.api.get("/contacts");
    expect(list.status).toBe(200);
    expect(list.body.contacts.map((c: any) => c.email)).toEqual(["before@example.com"]);
  });

  it("a pk_ key is refused on every secret endpoint", async () => {
    const p = await newProject();
    const ops = (await documentedOperations()).filter((op) => !PUBLIC_PATHS.has(op.template));
    expect(ops.map((op) => `${op.method} ${op.template}`)).toEqual(
      expect.arrayContaining(["GET /contacts", "POST /contacts", "GET /contacts/{id}", "PATCH /contacts/{id}", "DELETE /contacts/{id}"]),
    );
    for (const op of ops) {
      const body = ["POST", "PATCH", "PUT"].includes(op.method) ? { email: "x@example.com" } : undefined;
      const res = await call(op.method, op.path, { key: p.publicKey, body });
      const err = expectError(res, 403, "FORBIDDEN");
      expect(err.message).toMatch(/public key/i);
    }
    expect((await p.api.get("/contacts")).body.total).toBe(0);
  });
});

describe("envelope and X-Request-Id", () => {
  it("every response, success or error, carries a fresh X-Request-Id; errors repeat it in the body", async () => {
    const p = await newProject();
    const created = await p.api.post("/contacts", { email: "rid@example.com" });
    const responses = [
      await call("GET", "/health"),
      await call("GET", "/openapi.json"),
      created,
      await p.api.get("/contacts"),
      await p.api.get(`/contacts/${created.body.id}`),
      await p.api.delete(`/contacts/${created.body.id}`),
      await p.api.get("/contacts/missing"),
      await call("GET", "/contacts"),
      await p.publicApi.get("/contacts"),
      await call("GET", "/no/such/route"),
      await p.api.post("/contacts", { email: "bad" }),
    ];
    const ids = responses.map((r) => r.headers.get("X-Request-Id"));
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(ids.length);
    for (const res of responses.filter((r) => r.status >= 400)) {
      expectError(res, res.status);
      expect(Object.keys(res.body).sort()).toEqual(["error", "success", "timestamp"]);
    }
    expect(responses.filter((r) => r.status >= 400).map((r) => r.status)).toEqual([404, 401, 403, 404, 422]);
  });
});
