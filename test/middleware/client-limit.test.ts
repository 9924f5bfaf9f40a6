import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import type { Env } from "../../src/env";
import { countingD1, type D1Stats, emptyD1Stats } from "../../src/lib/d1-counter";
import { clearSnsKeyCache } from "../../src/outside/sns";
import { clickUrl, openPixelUrl, unsubscribeUrl } from "../../src/services/tracking/links";
import { CERT_URL, notification, sign } from "../fakes/sns";
import { getContact, getEmail, insertSentEmail } from "../support/emails";
import { BASE, type ErrorBody, expectError, newProject, type JsonResponse } from "../support/http";

/** wrangler.toml [[ratelimits]] CLIENT_LIMITER: requests per minute per client and kind of path. */
const CLIENT_LIMIT = 600;
const SECRET = env.LINK_SIGNING_SECRET!;

afterEach(() => vi.restoreAllMocks());

let ipCounter = 0;
/** A client address of its own for each test (the simulated limiter counts per key for a real minute). */
const nextIp = () => `203.0.113.${++ipCounter}`;

/** The Worker's app with the real (simulated) CLIENT_LIMITER binding, D1 counted; requests from `ip`. */
function client(ip: string, now?: () => number) {
  expect(env.CLIENT_LIMITER, "wrangler.toml's CLIENT_LIMITER binding in the vitest pool").toBeDefined();
  const stats: D1Stats = emptyD1Stats();
  const app = createApp({ now });
  const testEnv = { ...env, DB: countingD1(env.DB, stats) } as Env;
  async function request(method: string, path: string, init: { key?: string; body?: string; headers?: Record<string, string> } = {}): Promise<JsonResponse> {
    const headers: Record<string, string> = { "CF-Connecting-IP": ip, ...init.headers };
    if (init.key) headers.Authorization = `Bearer ${init.key}`;
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(path.startsWith("http") ? path : BASE + path, { method, headers, body: init.body, redirect: "manual" }),
      testEnv,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // pages and images stay text
    }
    return { status: res.status, headers: res.headers, body };
  }
  return { request, stats };
}

const madeUpKey = () => `sk_${crypto.randomUUID().replace(/-/g, "")}${"0".repeat(16)}`;

describe("key-less work is limited per client IP (Workers Rate Limiting binding)", () => {
  it(`made-up API keys: ${CLIENT_LIMIT} lookups a minute from one IP, then 429 without a D1 query; other IPs and cached keys unaffected`, async () => {
    const p = await newProject();
    const ip = nextIp();
    const at = Date.now();
    const { request, stats } = client(ip, () => at); // the key cache's clock stands still: the project's key stays cached
    expect((await request("GET", "/contacts?limit=1", { key: p.secretKey })).status).toBe(200);
    for (let i = 1; i < CLIENT_LIMIT; i += 50) {
      const batch = await Promise.all(Array.from({ length: Math.min(50, CLIENT_LIMIT - i) }, () => request("GET", "/contacts", { key: madeUpKey() })));
      expect(batch.map((r) => r.status)).toEqual(Array(batch.length).fill(401));
    }
    const queries = stats.roundTrips;
    const refused = await request("GET", "/contacts", { key: madeUpKey() });
    expectError(refused, 429, "RATE_LIMITED");
    expect(refused.headers.get("Retry-After")).toBe("60");
    expect(stats.roundTrips).toBe(queries);
    // The project's own (cached) key still works from that IP; another IP still gets its 401.
    expect((await request("GET", "/contacts?limit=1", { key: p.secretKey })).status).toBe(200);
    expectError(await client(nextIp()).request("GET", "/contacts", { key: madeUpKey() }), 401, "UNAUTHORIZED");
  });

  it(`unsubscribe posts: past ${CLIENT_LIMIT} a minute from one IP a valid one-click is a 429 and changes nothing`, async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const { request } = client(nextIp());
    const form = { body: "List-Unsubscribe=One-Click", headers: { "Content-Type": "application/x-www-form-urlencoded" } };
    for (let i = 0; i < CLIENT_LIMIT; i += 100) {
      const batch = await Promise.all(Array.from({ length: 100 }, () => request("POST", "/unsubscribe/not-a-token", form)));
      expect(new Set(batch.map((r) => r.status))).toEqual(new Set([400]));
    }
    const url = await unsubscribeUrl(BASE, SECRET, email.id);
    expectError(await request("POST", url, form), 429, "RATE_LIMITED");
    expect((await getContact(email.contactId!)).subscribed).toBe(true);
    expect((await client(nextIp()).request("POST", url, form)).status).toBe(200);
    expect((await getContact(email.contactId!)).subscribed).toBe(false);
  });

  it("tracking links: a repeat inside the de-dup window costs no D1 write; past the per-IP limit links still work and record nothing", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const { request, stats } = client(nextIp());
    const pixel = await openPixelUrl(BASE, SECRET, email.id);
    expect((await request("GET", pixel)).status).toBe(200);
    expect((await getEmail(email.id)).opens).toBe(1);
    const before = stats.roundTrips;
    for (let i = 0; i < 5; i++) expect((await request("GET", pixel)).status).toBe(200);
    expect(stats.roundTrips).toBe(before);
    expect((await getEmail(email.id)).opens).toBe(1);

    // Signed links to emails that do not exist: each is a D1 write that matches nothing, until the limit.
    const flood = client(nextIp());
    for (let i = 0; i < CLIENT_LIMIT; i += 100) {
      const urls = await Promise.all(Array.from({ length: 100 }, () => openPixelUrl(BASE, SECRET, crypto.randomUUID())));
      await Promise.all(urls.map((u) => flood.request("GET", u)));
    }
    const writes = flood.stats.roundTrips;
    const link = await clickUrl(BASE, SECRET, email.id, "https://example.com/landing");
    const click = await flood.request("GET", link);
    expect(click.status).toBe(302);
    expect(click.headers.get("Location")).toBe("https://example.com/landing");
    expect(flood.stats.roundTrips).toBe(writes);
    expect((await getEmail(email.id)).clicks).toBe(0);
    // The same link from another client is recorded.
    expect((await client(nextIp()).request("GET", link)).status).toBe(302);
    expect((await getEmail(email.id)).clicks).toBe(1);
  });

  it("an SNS signing certificate that cannot be fetched is not fetched again for a few seconds", async () => {
    clearSnsKeyCache();
    const fetched: string[] = [];
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input: RequestInfo | URL) => {
      fetched.push(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
      return new Response("gone", { status: 404 });
    });
    const { request } = client(nextIp());
    const post = async () =>
      request("POST", "/webhooks/ses", {
        body: JSON.stringify(await sign(notification({ notificationType: "Delivery" }), { certUrl: CERT_URL })),
        headers: { "Content-Type": "text/plain; charset=UTF-8" },
      });
    const first = await post();
    const second = await post();
    expect(first.status).toBeGreaterThanOrEqual(400);
    expect(second.status).toBe(first.status);
    expect((second.body as ErrorBody).error.code).toBe((first.body as ErrorBody).error.code);
    expect(fetched).toEqual([CERT_URL]);
    clearSnsKeyCache();
  });
});
