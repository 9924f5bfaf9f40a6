import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ProjectLimiter } from "../../src/durable/project-limiter";
import worker from "../../src/index";
import { BASE, expectError, newProject, type JsonResponse, type TestProject } from "../helpers";

const LIMIT = 1000; // vitest.config.ts sets RATE_LIMIT_PER_MINUTE to 1000
const CHEAP = "/contacts?limit=1";

/**
 * The limiter uses fixed, wall-clock-aligned minute windows. A boundary test must
 * not straddle two windows, so wait for the next minute when too little is left.
 */
async function ensureWindowHasAtLeast(ms: number) {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await new Promise((resolve) => setTimeout(resolve, left + 250));
}

/**
 * GET /contacts?limit=1 through the Worker's own fetch handler. Thousands of calls
 * through `exports.default` are quadratic in @cloudflare/vitest-pool-workers 0.15.1
 * (each call wraps the entrypoint prototype in one more Proxy, cloudflare/workers-sdk#15092)
 * and end in "Maximum call stack size exceeded", so the bulk traffic here calls
 * the handler directly: same app, same D1 and the same Durable Object.
 */
async function hit(key: string): Promise<JsonResponse> {
  const request = new Request(BASE + CHEAP, { headers: { Authorization: `Bearer ${key}` } });
  const response = await worker.fetch(request, env, createExecutionContext());
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** Fires `n` requests, at most `concurrency` at a time. */
async function fire(p: TestProject, n: number, concurrency: number): Promise<JsonResponse[]> {
  const out: JsonResponse[] = [];
  for (let i = 0; i < n; i += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, n - i) }, () => hit(p.secretKey));
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

describe("rate limit at the boundary", () => {
  it("allows 1000 requests a minute, refuses the 1001st with 429 and headers, and leaves other projects alone", async () => {
    await ensureWindowHasAtLeast(10_000);
    const a = await newProject("A");
    const b = await newProject("B");

    const first = await a.api.get(CHEAP);
    expect(first.status).toBe(200);
    expect(first.headers.get("RateLimit-Limit")).toBe(String(LIMIT));
    expect(first.headers.get("RateLimit-Remaining")).toBe(String(LIMIT - 1));
    const reset = Number(first.headers.get("RateLimit-Reset"));
    expect(reset).toBeGreaterThanOrEqual(1);
    expect(reset).toBeLessThanOrEqual(60);

    const rest = await fire(a, LIMIT - 1, 100);
    expect(rest.filter((r) => r.status !== 200).map((r) => r.status)).toEqual([]);
    const remaining = rest.map((r) => Number(r.headers.get("RateLimit-Remaining"))).sort((x, y) => x - y);
    expect(remaining[0]).toBe(0);
    expect(new Set(remaining).size).toBe(LIMIT - 1); // every request got its own slot

    const refused = await a.api.get(CHEAP);
    expectError(refused, 429, "RATE_LIMITED");
    const retryAfter = Number(refused.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers.get("RateLimit-Limit")).toBe(String(LIMIT));
    expect(refused.headers.get("RateLimit-Remaining")).toBe("0");
    expect(refused.headers.get("RateLimit-Reset")).toBe(String(retryAfter));
    expect(refused.headers.get("X-Request-Id")).toBe(refused.body.error.requestId);

    // Writes are refused too, and nothing is written.
    expectError(await a.api.post("/contacts", { email: "late@example.com" }), 429, "RATE_LIMITED");

    // Another project at the same moment is unaffected.
    const other = await b.api.get(CHEAP);
    expect(other.status).toBe(200);
    expect(other.headers.get("RateLimit-Remaining")).toBe(String(LIMIT - 1));
    expect((await b.api.post("/contacts", { email: "b@example.com" })).status).toBe(201);

    // Bad keys are answered before the limiter and do not reach a project's counter.
    expectError(await a.publicApi.get(CHEAP), 403, "FORBIDDEN");
  }, 60_000);

  it("is exact under concurrency: of 1100 simultaneous requests exactly 1000 pass", async () => {
    await ensureWindowHasAtLeast(8_000);
    const p = await newProject("burst");
    const results = await Promise.all(Array.from({ length: 1100 }, () => hit(p.secretKey)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1000);
    expect(statuses.filter((s) => s === 429)).toHaveLength(100);
  }, 60_000);
});

describe("ProjectLimiter window", () => {
  it("counts within a minute and starts again in the next minute", async () => {
    const stub = env.PROJECT_LIMITER.get(env.PROJECT_LIMITER.idFromName("window-roll-over"));
    await runInDurableObject(stub, (limiter: ProjectLimiter) => {
      const minute = 29_000_000 * 60_000; // an aligned minute start
      expect(limiter.hitApi(3, minute + 1_000)).toEqual({ allowed: true, limit: 3, remaining: 2, resetSeconds: 59 });
      expect(limiter.hitApi(3, minute + 30_000).remaining).toBe(1);
      expect(limiter.hitApi(3, minute + 59_000)).toEqual({ allowed: true, limit: 3, remaining: 0, resetSeconds: 1 });
      expect(limiter.hitApi(3, minute + 59_999)).toEqual({ allowed: false, limit: 3, remaining: 0, resetSeconds: 1 });
      // Next minute: the count is reset.
      expect(limiter.hitApi(3, minute + 60_000)).toEqual({ allowed: true, limit: 3, remaining: 2, resetSeconds: 60 });
      expect(limiter.hitApi(3, minute + 60_001).remaining).toBe(1);
      // Two minutes later, a refused window does not carry over.
      limiter.hitApi(3, minute + 60_002);
      expect(limiter.hitApi(3, minute + 60_003).allowed).toBe(false);
      expect(limiter.hitApi(3, minute + 180_000)).toMatchObject({ allowed: true, remaining: 2 });
    });
  });

  it("uses one counter per project", async () => {
    const a = env.PROJECT_LIMITER.get(env.PROJECT_LIMITER.idFromName("limiter-a"));
    const b = env.PROJECT_LIMITER.get(env.PROJECT_LIMITER.idFromName("limiter-b"));
    const now = 29_000_001 * 60_000;
    expect((await a.hitApi(1, now)).allowed).toBe(true);
    expect((await a.hitApi(1, now)).allowed).toBe(false);
    expect((await b.hitApi(1, now)).allowed).toBe(true);
  });
});
