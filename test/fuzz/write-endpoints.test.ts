import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { MAX_BODY_BYTES, MAX_SEND_BODY_BYTES } from "../../src/app";
import { fakeDns } from "../fakes/dns";
import { call, expectError, newProject, type JsonResponse, type TestProject } from "../support/http";
import { verifiedDomain } from "../support/sending";
import type { Contact, OpenApiDoc, UpsertedContact } from "../support/api";

type Field =
  | { kind: "email"; required?: boolean; nullable?: boolean }
  | { kind: "string"; required?: boolean; nullable?: boolean; max?: number; min?: number }
  | { kind: "boolean" }
  | { kind: "enum"; values: string[]; required?: boolean }
  | { kind: "data" };

interface WriteEndpoint {
  method: "POST" | "PATCH" | "PUT";
  /** The path as /openapi.json lists it. */
  route: string;
  /** Which key the endpoint is called with. */
  key?: "secret" | "public";
  /** A valid body; every generated body breaks it in at least one field. */
  valid: Record<string, unknown>;
  /** Project-specific parts of the valid body (e.g. a verified sender), merged over `valid`. */
  prepare?: (p: TestProject) => Promise<Record<string, unknown>>;
  /** Largest accepted body (default MAX_BODY_BYTES). */
  maxBodyBytes?: number;
  fields: Record<string, Field>;
  /** Creates what the request targets and returns the concrete path. */
  target?: (p: TestProject) => Promise<string>;
  /** GET paths that must answer identically before and after (`{target}` is replaced). */
  unchanged: string[];
}

async function created(p: TestProject, path: string, body: unknown): Promise<string> {
  const res = await p.api.post<{ id: string }>(path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

const ENDPOINTS: WriteEndpoint[] = [
  {
    method: "POST",
    route: "/contacts",
    valid: { email: "fuzz@example.com", subscribed: true, data: { plan: "pro" } },
    fields: { email: { kind: "email", required: true }, subscribed: { kind: "boolean" }, data: { kind: "data" } },
    unchanged: ["/contacts?limit=100"],
  },
  {
    method: "PATCH",
    route: "/contacts/{id}",
    valid: { subscribed: false, data: { plan: "pro" } },
    fields: { subscribed: { kind: "boolean" }, data: { kind: "data" } },
    target: async (p) => `/contacts/${await created(p, "/contacts", { email: "target@example.com", data: { keep: 1 } })}`,
    unchanged: ["{target}", "/contacts?limit=100"],
  },
  {
    method: "POST",
    route: "/templates",
    valid: { name: "Welcome", subject: "Hi", body: "<p>Hi</p>", type: "TRANSACTIONAL" },
    fields: {
      name: { kind: "string", required: true, min: 1, max: 200 },
      subject: { kind: "string", required: true, min: 1, max: 998 },
      body: { kind: "string", required: true, min: 1 },
      type: { kind: "enum", values: ["TRANSACTIONAL", "MARKETING"], required: true },
      from: { kind: "email", nullable: true },
      replyTo: { kind: "email", nullable: true },
    },
    unchanged: ["/templates?limit=100"],
  },
  {
    method: "PATCH",
    route: "/templates/{id}",
    valid: { name: "Renamed", type: "MARKETING" },
    fields: {
      name: { kind: "string", min: 1, max: 200 },
      subject: { kind: "string", min: 1, max: 998 },
      body: { kind: "string", min: 1 },
      type: { kind: "enum", values: ["TRANSACTIONAL", "MARKETING"] },
      from: { kind: "email", nullable: true },
      replyTo: { kind: "email", nullable: true },
    },
    target: async (p) => `/templates/${await created(p, "/templates", { name: "Original", subject: "S", body: "<p>B</p>", type: "TRANSACTIONAL" })}`,
    unchanged: ["{target}", "/templates?limit=100"],
  },
  {
    method: "POST",
    route: "/v1/track",
    key: "public",
    valid: { email: "fuzz@example.com", event: "signed-up", data: { plan: "pro" }, subscribed: true },
    fields: {
      email: { kind: "email", required: true },
      event: { kind: "string", required: true, min: 1, max: 100 },
      data: { kind: "data" },
      subscribed: { kind: "boolean" },
    },
    unchanged: ["/contacts?limit=100", "/events?limit=100"],
  },
  {
    method: "POST",
    route: "/v1/send",
    // From a domain verified (through the API, against the fake DNS) in the project: the valid body is sent.
    valid: { to: "fuzz@example.com", subject: "Hi", body: "<p>Hi</p>", subscribed: true, data: { plan: "pro" } },
    prepare: async (p) => ({ from: `fuzz@${await verifiedDomain(p, fakeDns())}` }),
    maxBodyBytes: MAX_SEND_BODY_BYTES,
    fields: {
      to: { kind: "email", required: true },
      from: { kind: "email" },
      subject: { kind: "string", min: 1, max: 998 },
      body: { kind: "string", min: 1, max: 512 * 1024 },
      type: { kind: "enum", values: ["html", "markdown"] },
      name: { kind: "string", max: 200 },
      reply: { kind: "email" },
      subscribed: { kind: "boolean" },
      data: { kind: "data" },
    },
    unchanged: ["/contacts?limit=100", "/emails?limit=100"],
  },
  {
    method: "POST",
    route: "/domains",
    valid: { domain: "fuzz-example.com" },
    fields: { domain: { kind: "string", required: true, max: 300 } },
    unchanged: ["/domains?limit=100"],
  },
  // Later: { method: "POST", route: "/campaigns", ... }, { method: "PATCH", route: "/campaigns/{id}", ... }
];

// ---- generators -------------------------------------------------------------

const SPECIAL_TEXT = ["\u202Eevil\u202C", "שלום", "مرحبا", "🦄👩‍👩‍👧", "\u0000", "a\u0000b", "\ud800", "x\udfffy", "\ufeff", "\u200b", "e\u0301"];

/** Text with the awkward parts of Unicode mixed in: RTL, emoji, lone surrogates, NUL. */
const weirdText = fc
  .array(fc.oneof(fc.constantFrom(...SPECIAL_TEXT), fc.string({ unit: "binary", maxLength: 8 })), { maxLength: 6 })
  .map((parts) => parts.join(""));

const nonObjectJson = fc.oneof(
  fc.constant(null),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  weirdText,
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
);

const notAString = fc.oneof(fc.integer(), fc.boolean(), fc.array(fc.string(), { maxLength: 3 }), fc.dictionary(fc.string(), fc.string(), { maxKeys: 2 }));
const notABoolean = fc.oneof(
  fc.constantFrom("true", "false", "1", "", "yes"),
  fc.integer(),
  fc.array(fc.boolean(), { maxLength: 2 }),
  fc.object({ maxDepth: 1 }),
);

const badEmail = fc.oneof(
  weirdText.filter((s) => !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(s)),
  fc.constantFrom(
    "",
    " ",
    "plainaddress",
    "@example.com",
    "a@",
    "a@b",
    "a b@example.com",
    "a@@example.com",
    "a@exa mple.com",
    "a\u0000@example.com",
    "a@example.com\u0000",
    "a\ud800@example.com",
    "\u202Eadmin@example.com",
    "🦄@🦄",
    "a@example.com\r\nBcc: victim@example.com",
    `${"a".repeat(250)}@example.com`,
    `${"a".repeat(100_000)}@example.com`,
  ),
);

function nested(depth: number, kind: "array" | "object"): string {
  return kind === "array" ? "[".repeat(depth) + "]".repeat(depth) : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
}

/** A value that `data` (a flat-ish key/value object: keys 1-128, 8 levels, 32 KB) must refuse. */
const badData = fc.oneof(
  fc.constant(null),
  fc.integer(),
  weirdText,
  fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
  fc.constantFrom({ "": 1 }, { ["k".repeat(129)]: 1 }, { big: "x".repeat(100_000) }, JSON.parse(nested(9, "object")), {
    deep: JSON.parse(nested(200, "array")),
  }),
);

function badValueFor(field: Field): fc.Arbitrary<unknown> {
  const nullIfNotNullable = "nullable" in field && field.nullable ? [] : [fc.constant(null)];
  switch (field.kind) {
    case "email":
      return fc.oneof(badEmail, notAString, ...nullIfNotNullable);
    case "string": {
      const options: fc.Arbitrary<unknown>[] = [notAString, ...nullIfNotNullable];
      if (field.min) options.push(fc.constant(""));
      if (field.max) {
        options.push(fc.constant("x".repeat(field.max + 1)), fc.constant("é".repeat(field.max + 1)));
      }
      return fc.oneof(...options);
    }
    case "boolean":
      return fc.oneof(notABoolean, fc.constant(null));
    case "enum":
      return fc
        .oneof(
          weirdText,
          fc.constantFrom(...field.values.map((v) => v.toLowerCase()), ...field.values.map((v) => v.toUpperCase()), ...field.values.map((v) => ` ${v}`)),
          notAString,
          fc.constant(null),
        )
        .filter((v) => !field.values.includes(v as string));
    case "data":
      return badData;
  }
}

interface Sample {
  description: string;
  raw: string;
  /** The one field this body breaks: the 422 must name it. */
  field?: string;
}

/** Bodies that break the endpoint's valid body in one field (other strings get weird text). */
function fieldSamples(endpoint: WriteEndpoint, valid: Record<string, unknown>): fc.Arbitrary<Sample> {
  const perField = Object.entries(endpoint.fields).map(([name, field]) =>
    fc.record({ value: badValueFor(field), filler: weirdText, drop: fc.boolean() }).map(({ value, filler, drop }) => {
      const body: Record<string, unknown> = { ...valid };
      // Put awkward (but well-typed) text into the other free-text fields too.
      for (const [other, spec] of Object.entries(endpoint.fields)) {
        if (other !== name && spec.kind === "string" && !spec.min && !spec.max && typeof body[other] === "string") body[other] = filler;
      }
      // A missing required field is as malformed as a wrong one.
      if (drop && "required" in field && field.required) delete body[name];
      else body[name] = value;
      return { description: `${name}: ${JSON.stringify(body[name])?.slice(0, 80)}`, raw: JSON.stringify(body), field: name };
    }),
  );
  return fc.oneof(...perField);
}

const wholeBodySamples: fc.Arbitrary<Sample> = nonObjectJson.map((value) => ({
  description: `body ${JSON.stringify(value).slice(0, 80)}`,
  raw: JSON.stringify(value),
}));

/** Always-run cases for every endpoint (deep nesting, size limits, broken JSON). */
function fixedSamples(endpoint: WriteEndpoint, validBody: Record<string, unknown>): Sample[] {
  const valid = JSON.stringify(validBody);
  const maxBytes = endpoint.maxBodyBytes ?? MAX_BODY_BYTES;
  const firstField = Object.keys(endpoint.fields)[0];
  return [
    { description: "array depth 10000", raw: nested(10_000, "array") },
    // Unknown keys are ignored, so the deep object goes into a real field.
    { description: `${firstField}: object depth 10000`, raw: `{"${firstField}":${nested(10_000, "object")}}` },
    { description: `${firstField}: array depth 10000`, raw: `{"${firstField}":${nested(10_000, "array")}}` },
    { description: "valid body inside an array", raw: `[${valid}]` },
    { description: "null", raw: "null" },
    { description: "number", raw: "42" },
    { description: "empty body", raw: "" },
    { description: "NUL byte outside a string", raw: `${valid.slice(0, -1)}\u0000}` },
    { description: "truncated JSON", raw: valid.slice(0, -1) },
    { description: "lone surrogate escape as the body", raw: '"\\ud800"' },
    { description: `over ${maxBytes} bytes`, raw: JSON.stringify({ ...validBody, padding: "x".repeat(maxBytes) }) },
    { description: "~100 KB of nested arrays", raw: nested(50_000, "array") },
  ];
}

// ---- harness ----------------------------------------------------------------

/**
 * Through the Worker's fetch handler directly: hundreds of calls through
 * `exports.default` are quadratic in vitest-pool-workers 0.15.1 (cloudflare/workers-sdk#15092).
 */
function send(method: string, path: string, key: string, raw: string): Promise<JsonResponse> {
  return call(method, path, { key, rawBody: raw, headers: { "Content-Type": "application/json" }, env, waitForBackground: false });
}

async function snapshot(p: TestProject, paths: string[], target: string) {
  const out: Record<string, unknown> = {};
  for (const path of paths) {
    const res = await p.api.get(path.replace("{target}", target));
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
    out[path] = res.body;
  }
  return out;
}

/**
 * Malformed JSON or a non-object body is 400 (or 422), an oversized body 413,
 * a body with one broken field a 422 that names that field (or something inside it).
 */
function expectRefused(res: JsonResponse, sample: Sample) {
  const label = `${sample.description} -> ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
  if (sample.field) {
    const error = expectError(res, 422, "VALIDATION_ERROR");
    const fields = (error.errors ?? []).map((e) => e.field);
    expect(
      fields.some((f) => f === sample.field || f.startsWith(`${sample.field}.`)),
      `${label}: the 422 names ${sample.field}`,
    ).toBe(true);
    return;
  }
  expect([400, 413, 422], label).toContain(res.status);
  expectError(res, res.status);
}

afterEach(() => vi.restoreAllMocks());

let documented = new Set<string>();
beforeAll(async () => {
  const doc = await call<OpenApiDoc>("GET", "/openapi.json");
  documented = new Set(
    Object.entries<Record<string, unknown>>(doc.body.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`)),
  );
});

describe.each(ENDPOINTS)("$method $route with malformed bodies", (endpoint) => {
  const name = `${endpoint.method} ${endpoint.route}`;

  it("refuses with exactly 400/413/422 in the envelope (422 naming the broken field), never 5xx, and changes nothing", async () => {
    expect([...documented], `${name} is in /openapi.json`).toContain(name);
    const p = await newProject(`fuzz ${name}`);
    const key = endpoint.key === "public" ? p.publicKey : p.secretKey;
    const target = endpoint.target ? await endpoint.target(p) : endpoint.route;
    const valid = { ...endpoint.valid, ...(await endpoint.prepare?.(p)) };
    // The valid body really is accepted on a twin project, so the table describes a working request.
    const twin = await newProject("twin");
    const twinTarget = endpoint.target ? await endpoint.target(twin) : endpoint.route;
    const twinValid = { ...endpoint.valid, ...(await endpoint.prepare?.(twin)) };
    const accepted = await send(endpoint.method, twinTarget, endpoint.key === "public" ? twin.publicKey : twin.secretKey, JSON.stringify(twinValid));
    expect(accepted.status, JSON.stringify(accepted.body)).toBeGreaterThanOrEqual(200);
    expect(accepted.status, JSON.stringify(accepted.body)).toBeLessThan(300);

    const before = await snapshot(p, endpoint.unchanged, target);

    for (const sample of fixedSamples(endpoint, valid)) expectRefused(await send(endpoint.method, target, key, sample.raw), sample);

    await fc.assert(
      fc.asyncProperty(fc.oneof({ weight: 4, arbitrary: fieldSamples(endpoint, valid) }, { weight: 1, arbitrary: wholeBodySamples }), async (sample) => {
        expectRefused(await send(endpoint.method, target, key, sample.raw), sample);
      }),
      { numRuns: 80 },
    );

    expect(await snapshot(p, endpoint.unchanged, target)).toEqual(before);
  }, 60_000);
});

describe("well-typed but awkward text is stored, not a 5xx", () => {
  it("contact data and track events keep RTL, emoji, NUL and replace lone surrogates", async () => {
    const p = await newProject();
    const data = { rtl: "\u202Eevil\u202C שלום", emoji: "🦄👩‍👩‍👧", nul: "a\u0000b", lone: "x\ud800y", "🔑": "key" };
    const res = await p.api.post<UpsertedContact>("/contacts", { email: "weird@example.com", data });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const fetched = await p.api.get<Contact>(`/contacts/${res.body.id}`);
    expect(fetched.body.data).toMatchObject({ rtl: data.rtl, emoji: data.emoji, nul: data.nul, "🔑": "key" });
    expect(["x\ud800y", "x\ufffdy"]).toContain(fetched.body.data.lone);
    const tracked = await p.publicApi.post("/v1/track", { email: "weird@example.com", event: "ünïcødé 🦄", data: { lone: "\udfff" } });
    expect(tracked.status, JSON.stringify(tracked.body)).toBe(200);
  });
});
