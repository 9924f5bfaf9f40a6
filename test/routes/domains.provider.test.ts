import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../src/db/client";
import { domains } from "../../src/db/schema";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import { call, expectError, newProject, type JsonResponse, type TestProject } from "../support/http";
import { fakeDns } from "../fakes/dns";
import type { Domain, DomainList } from "../support/api";

/**
 * Sending domains against the SES account every project shares: a fake SES
 * identity API (CreateEmailIdentity, PutEmailIdentityDkimSigningAttributes,
 * DeleteEmailIdentity) at the HTTP boundary, holding the account's identities.
 */
const SES = "https://ses-identities.test";
let identities: Map<string, { selector: string; key: string }>;
let sesCalls: string[];
let deleteStatus: number;

beforeEach(() => {
  identities = new Map();
  sesCalls = [];
  deleteStatus = 200;
  fakeDns(async (request) => {
    const url = new URL(request.url);
    sesCalls.push(`${request.method} ${url.pathname}`);
    if (request.method === "POST" && url.pathname === "/v2/email/identities") {
      const body = (await request.json()) as {
        EmailIdentity: string;
        DkimSigningAttributes: { DomainSigningSelector: string; DomainSigningPrivateKey: string };
      };
      if (identities.has(body.EmailIdentity)) {
        return Response.json({ message: "Email identity already exists" }, { status: 409, headers: { "x-amzn-ErrorType": "AlreadyExistsException" } });
      }
      identities.set(body.EmailIdentity, {
        selector: body.DkimSigningAttributes.DomainSigningSelector,
        key: body.DkimSigningAttributes.DomainSigningPrivateKey,
      });
      return Response.json({ IdentityType: "DOMAIN" });
    }
    const identity = /^\/v2\/email\/identities\/([^/]+)(\/dkim\/signing)?$/.exec(url.pathname);
    if (identity && request.method === "PUT") {
      identities.set(decodeURIComponent(identity[1]), { selector: "replaced", key: "replaced" });
      return Response.json({});
    }
    if (identity && request.method === "DELETE") {
      if (deleteStatus !== 200) return Response.json({ message: "scripted" }, { status: deleteStatus });
      const existed = identities.delete(decodeURIComponent(identity[1]));
      return existed ? Response.json({}) : Response.json({ message: "not found" }, { status: 404 });
    }
    return new Response("unexpected", { status: 599 });
  });
});

afterEach(() => {
  vi.restoreAllMocks();
});

const sesEnv = {
  ...env,
  EMAIL_PROVIDER: "ses",
  SES_ENDPOINT: SES,
  SES_REGION: "eu-west-1",
  SES_ACCESS_KEY_ID: "AKIDEXAMPLE",
  SES_SECRET_ACCESS_KEY: "secret-example",
} as Env;

const request = <T = unknown>(p: TestProject, method: string, path: string, body?: unknown, overrides: Partial<Env> = {}): Promise<JsonResponse<T>> =>
  call<T>(method, path, { key: p.secretKey, body, headers: { "Content-Type": "application/json" }, env: { ...sesEnv, ...overrides } as Env });

let seq = 0;
const uniqueDomain = () => `p${Date.now().toString(36)}${seq++}.example`;

describe("domains in the shared SES account", () => {
  it("refuses a domain whose identity already exists in the account, and never replaces its DKIM key", async () => {
    const p = await newProject();
    const name = uniqueDomain();
    identities.set(name, { selector: "theirs", key: "THEIR-KEY" });
    const err = expectError(await request(p, "POST", "/domains", { domain: name }), 409, "CONFLICT");
    expect(err.message).toContain("already exists");
    expect(identities.get(name)).toEqual({ selector: "theirs", key: "THEIR-KEY" });
    expect(sesCalls.filter((c) => c.startsWith("PUT"))).toEqual([]);
    expect((await request<DomainList>(p, "GET", "/domains")).body.data.total).toBe(0);
  });

  it("deleting a domain deletes its identity; if SES fails, nothing is deleted", async () => {
    const p = await newProject();
    const name = uniqueDomain();
    const created = await request<Domain>(p, "POST", "/domains", { domain: name });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(identities.has(name)).toBe(true);

    deleteStatus = 500;
    expectError(await request(p, "DELETE", `/domains/${created.body.id}`), 503);
    expect((await request(p, "GET", `/domains/${created.body.id}`)).status).toBe(200);
    expect(identities.has(name)).toBe(true);

    deleteStatus = 200;
    expect((await request(p, "DELETE", `/domains/${created.body.id}`)).status).toBe(204);
    expect(identities.has(name)).toBe(false);
    expect(sesCalls).toContain(`DELETE /v2/email/identities/${name}`);
    // The name is free again: another project can add it.
    const other = await newProject();
    expect((await request(other, "POST", "/domains", { domain: name })).status).toBe(201);
  });

  it("releases a domain never verified 7 days after it was added (identity and record), keeping the others", async () => {
    const p = await newProject();
    const stale = await request<Domain>(p, "POST", "/domains", { domain: uniqueDomain() });
    const fresh = await request<Domain>(p, "POST", "/domains", { domain: uniqueDomain() });
    const lapsed = await request<Domain>(p, "POST", "/domains", { domain: uniqueDomain() });
    const db = getDb(env.DB);
    const longAgo = new Date(Date.now() - 7 * 24 * 3600_000 - 60_000);
    // Never verified within its window: the checks marked it FAILED.
    await db.update(domains).set({ createdAt: longAgo, status: "FAILED", nextCheckAt: null }).where(eq(domains.id, stale.body.id));
    // FAILED after its 72 hours, but still in the week "check now" may rescue it.
    await db
      .update(domains)
      .set({ createdAt: new Date(Date.now() - 6 * 24 * 3600_000), status: "FAILED", nextCheckAt: null })
      .where(eq(domains.id, fresh.body.id));
    // Verified once, then its records vanished: its owner's, not released.
    await db
      .update(domains)
      .set({ createdAt: longAgo, status: "FAILED", verifiedAt: new Date(Date.now() - 72 * 3600_000), nextCheckAt: null })
      .where(eq(domains.id, lapsed.body.id));

    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "* * * * *" }), sesEnv, ctx);
    await waitOnExecutionContext(ctx);

    expect((await request(p, "GET", `/domains/${stale.body.id}`)).status).toBe(404);
    expect(identities.has(stale.body.domain)).toBe(false);
    expect((await request(p, "GET", `/domains/${fresh.body.id}`)).status).toBe(200);
    expect((await request(p, "GET", `/domains/${lapsed.body.id}`)).status).toBe(200);
    expect(identities.has(fresh.body.domain)).toBe(true);
    expect(identities.has(lapsed.body.domain)).toBe(true);
  });

  it("caps the domains of one project (QUOTA_DOMAINS): 403 QUOTA_EXCEEDED, nothing registered", async () => {
    const p = await newProject();
    const limits = { QUOTA_DOMAINS: "2" };
    for (let i = 0; i < 2; i++) expect((await request(p, "POST", "/domains", { domain: uniqueDomain() }, limits)).status).toBe(201);
    const name = uniqueDomain();
    const err = expectError(await request(p, "POST", "/domains", { domain: name }, limits), 403, "QUOTA_EXCEEDED");
    expect(err.message).toContain("2 sending domains");
    expect(identities.has(name)).toBe(false);
    // Another project is not affected.
    expect((await request(await newProject(), "POST", "/domains", { domain: uniqueDomain() }, limits)).status).toBe(201);
  });
});
