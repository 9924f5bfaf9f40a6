import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { getDb } from "../../src/db/client";
import { apiKeys } from "../../src/db/schema";
import { generateApiKey, KEY_CACHE_TTL_MS } from "../../src/services/api-keys";
import { buildKeyRotation, buildSetProjectDisabled } from "../../src/services/projects";
import { TtlCache } from "../../src/lib/ttl-cache";
import { BASE, call, expectError, newProject, type ErrorBody, type JsonResponse } from "../support/http";
import type { Contact, ContactList, OpenApiDoc, UpsertedContact } from "../support/api";

/**
 * The Worker's app with its clock (rate limiter and key cache) in the test's
 * hands, so a test can move past the key cache's TTL without waiting. Same D1,
 * same Durable Object as the Worker; a fresh app has an empty key cache.
 */
function appWithClock(start = Date.now()) {
  const clock = { now: start };
  const app = createApp({ now: () => clock.now });
  async function request<T = unknown>(method: string, path: string, key: string, body?: unknown): Promise<JsonResponse<T>> {
    const headers: Record<string, string> = { Authorization: `Bearer ${key}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await app.fetch(
      new Request(BASE + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
      env,
      createExecutionContext(),
    );
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
  }
  return { clock, request };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const PUBLIC_PATHS = new Set(["/health", "/v1/track"]);

/** Every documented operation, with `{param}` segments filled in. */
async function documentedOperations() {
  const doc = await call<OpenApiDoc>("GET", "/openapi.json");
  expect(doc.status).toBe(200);
  const ops: { method: string; path: string; template: string }[] = [];
  for (const [template, item] of Object.entries(doc.body.paths)) {
    for (const [method, operation] of Object.entries(item)) {
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

  it("after a key rotation the old keys work at most KEY_CACHE_TTL_MS longer (the key cache), then are refused; the new ones work at once", async () => {
    const { clock, request } = appWithClock();
    const p = await newProject();
    const contact = await request<UpsertedContact>("POST", "/contacts", p.secretKey, { email: "kept@example.com" });
    expect(contact.status).toBe(201);
    expect((await request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "signup" })).status).toBe(200);
    const db = getDb(env.DB);
    const rotation = await buildKeyRotation(db, p.id);
    await db.batch(rotation.queries);

    // Up to the TTL the isolate still knows the old keys (the documented bound).
    clock.now += KEY_CACHE_TTL_MS;
    expect((await request("GET", "/contacts", p.secretKey)).status).toBe(200);
    // Past it they are looked up again, and refused.
    clock.now += 1;
    expectError(await request("GET", "/contacts", p.secretKey), 401, "UNAUTHORIZED");
    expectError(await request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "signup" }), 401, "UNAUTHORIZED");
    // And stay refused: the refusal is cached, never turned back into the old answer.
    clock.now += KEY_CACHE_TTL_MS * 3;
    expectError(await request("GET", "/contacts", p.secretKey), 401, "UNAUTHORIZED");

    const fresh = await request<Contact>("GET", `/contacts/${contact.body.id}`, rotation.secretKey);
    expect(fresh.status).toBe(200);
    expect(fresh.body.email).toBe("kept@example.com");
    // The new public key authenticates, but is still only good for /v1/track.
    expectError(await request("GET", "/contacts", rotation.publicKey), 403, "FORBIDDEN");
  });

  it("an unknown key is remembered as unknown for at most KEY_CACHE_TTL_MS", async () => {
    const { clock, request } = appWithClock();
    const p = await newProject();
    const key = await generateApiKey("secret");
    expectError(await request("GET", "/contacts", key.key), 401, "UNAUTHORIZED");
    // The key appears (an operator inserted it): the isolate answers from its cache until the TTL runs out.
    await getDb(env.DB)
      .insert(apiKeys)
      .values({ id: crypto.randomUUID(), projectId: p.id, kind: "secret", keyHash: key.hash, keyPrefix: key.prefix, createdAt: new Date() });
    expectError(await request("GET", "/contacts", key.key), 401, "UNAUTHORIZED");
    clock.now += KEY_CACHE_TTL_MS + 1;
    expect((await request("GET", "/contacts", key.key)).status).toBe(200);
  });
});

describe("403", () => {
  it("a disabled project gets PROJECT_DISABLED on every endpoint, /v1/track included, with either key, within KEY_CACHE_TTL_MS", async () => {
    const { clock, request } = appWithClock();
    const p = await newProject();
    const contact = await request<UpsertedContact>("POST", "/contacts", p.secretKey, { email: "before@example.com" });
    expect(contact.status).toBe(201);
    await buildSetProjectDisabled(getDb(env.DB), p.id, true);
    clock.now += KEY_CACHE_TTL_MS + 1;

    const ops = await documentedOperations();
    const targets = [...ops];
    if (!targets.some((op) => op.path === "/v1/track")) targets.push({ method: "POST", path: "/v1/track", template: "/v1/track" });
    expect(targets.length).toBeGreaterThanOrEqual(5);
    for (const op of targets) {
      const body = op.method === "POST" || op.method === "PATCH" || op.method === "PUT" ? { email: "x@example.com", event: "e" } : undefined;
      expectError(await request(op.method, op.path, p.secretKey, body), 403, "PROJECT_DISABLED");
    }
    expectError(await request("POST", "/v1/track", p.publicKey, { email: "x@example.com", event: "e" }), 403, "PROJECT_DISABLED");
    expectError(await request("GET", `/contacts/${contact.body.id}`, p.secretKey), 403, "PROJECT_DISABLED");

    // Re-enabled: it works again (once the cached answer expired) and nothing was written while disabled.
    await buildSetProjectDisabled(getDb(env.DB), p.id, false);
    clock.now += KEY_CACHE_TTL_MS + 1;
    const list = await request<ContactList>("GET", "/contacts", p.secretKey);
    expect(list.status).toBe(200);
    expect(list.body.contacts.map((c) => c.email)).toEqual(["before@example.com"]);
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
    expect((await p.api.get<ContactList>("/contacts")).body.total).toBe(0);
  });
});

describe("envelope and X-Request-Id", () => {
  it("every response, success or error, carries a fresh X-Request-Id; errors repeat it in the body", async () => {
    const p = await newProject();
    const created = await p.api.post<UpsertedContact>("/contacts", { email: "rid@example.com" });
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
      expect(Object.keys(res.body as ErrorBody).sort()).toEqual(["error", "success", "timestamp"]);
    }
    expect(responses.filter((r) => r.status >= 400).map((r) => r.status)).toEqual([404, 401, 403, 404, 422]);
  });
});

describe("the key cache", () => {
  afterEach(() => vi.restoreAllMocks());

  it("never keeps a raw API key in the isolate's memory: entries are keyed by an HMAC of it, and it still answers from the cache", async () => {
    const set = vi.spyOn(TtlCache.prototype, "set");
    const get = vi.spyOn(TtlCache.prototype, "get");
    const { request } = appWithClock();
    const p = await newProject();
    const bogus = await generateApiKey("secret");
    expect((await request("GET", "/contacts", p.secretKey)).status).toBe(200);
    expect((await request("GET", "/contacts", p.secretKey)).status).toBe(200);
    expectError(await request("GET", "/contacts", bogus.key), 401, "UNAUTHORIZED");
    const raw = [p.secretKey, bogus.key];
    const keysUsed = [...set.mock.calls, ...get.mock.calls].map((args) => String(args[0]));
    expect(keysUsed.length).toBeGreaterThanOrEqual(4);
    for (const used of keysUsed) for (const key of raw) expect(used).not.toContain(key.slice(3));
    // The same key maps to the same entry (the second request was a cache hit: one set for it).
    const setFor = set.mock.calls.filter(([, value]) => typeof value === "object" && (value as { projectId?: string }).projectId === p.id);
    expect(setFor).toHaveLength(1);
  });
});
