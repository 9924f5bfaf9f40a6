import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import type { ProjectLimiter } from "../../src/entrypoints/project-limiter";
import { call, expectError, newProject, type ErrorBody, type JsonResponse } from "../support/http";

const LIMIT = 1000; // vitest.config.ts sets RATE_LIMIT_PER_MINUTE to 1000
const CHEAP = "/contacts?limit=1";
const MINUTE = 60_000;

/**
 * The Worker's app with the rate limiter's clock in the test's hands: windows
 * are fixed minutes of that clock, so no test waits for or races a real minute.
 * Requests go to the app's fetch handler directly: thousands of calls through
 * `exports.default` are quadratic in @cloudflare/vitest-pool-workers 0.15.1
 * (cloudflare/workers-sdk#15092). Same D1, same Durable Object.
 */
function appAt(start: number) {
  const clock = { now: start };
  const app = createApp({ now: () => clock.now });
  async function request(key: string, method = "GET", path = CHEAP, body?: unknown): Promise<JsonResponse> {
    return call(method, path, { key, body, handler: (r, e, ctx) => app.fetch(r, e, ctx), env, waitForBackground: false });
  }
  return { clock, request };
}

/** A minute start far from today's wall clock, different for each test so no test sees another's window. */
let minuteCounter = 29_100_000;
const nextMinute = () => ++minuteCounter * MINUTE;

describe("rate limit at the boundary", () => {
  it("allows 1000 requests a minute, refuses the 1001st with 429 and headers, writes nothing, and leaves other projects alone", async () => {
    const minute = nextMinute();
    const { clock, request } = appAt(minute + 1_000); // 59 s left in the window
    const a = await newProject("A");
    const b = await newProject("B");

    const first = await request(a.secretKey);
    expect(first.status).toBe(200);
    expect(first.headers.get("RateLimit-Limit")).toBe(String(LIMIT));
    expect(first.headers.get("RateLimit-Remaining")).toBe(String(LIMIT - 1));
    expect(first.headers.get("RateLimit-Reset")).toBe("59");

    const rest: JsonResponse[] = [];
    for (let i = 0; i < LIMIT - 1; i += 100) {
      rest.push(...(await Promise.all(Array.from({ length: Math.min(100, LIMIT - 1 - i) }, () => request(a.secretKey)))));
    }
    expect(rest.filter((r) => r.status !== 200).map((r) => r.status)).toEqual([]);
    const remaining = rest.map((r) => Number(r.headers.get("RateLimit-Remaining"))).sort((x, y) => x - y);
    expect(remaining[0]).toBe(0);
    expect(new Set(remaining).size).toBe(LIMIT - 1); // every request got its own slot

    clock.now = minute + 30_000;
    const refused = await request(a.secretKey);
    expectError(refused, 429, "RATE_LIMITED");
    expect(refused.headers.get("Retry-After")).toBe("30");
    expect(refused.headers.get("RateLimit-Limit")).toBe(String(LIMIT));
    expect(refused.headers.get("RateLimit-Remaining")).toBe("0");
    expect(refused.headers.get("RateLimit-Reset")).toBe("30");
    expect(refused.headers.get("X-Request-Id")).toBe((refused.body as ErrorBody).error.requestId);

    // Writes are refused too.
    expectError(await request(a.secretKey, "POST", "/contacts", { email: "late@example.com" }), 429, "RATE_LIMITED");

    // Another project at the same moment is unaffected.
    const other = await request(b.secretKey);
    expect(other.status).toBe(200);
    expect(other.headers.get("RateLimit-Remaining")).toBe(String(LIMIT - 1));
    expect((await request(b.secretKey, "POST", "/contacts", { email: "b@example.com" })).status).toBe(201);

    // Bad keys are answered before the limiter and do not reach a project's counter.
    expectError(await request(a.publicKey), 403, "FORBIDDEN");

    // The next minute starts a fresh window, and shows that the refused write wrote nothing.
    clock.now = minute + MINUTE;
    const next = await request(a.secretKey, "GET", "/contacts?limit=100");
    expect(next.status).toBe(200);
    expect(next.headers.get("RateLimit-Remaining")).toBe(String(LIMIT - 1));
    expect(next.headers.get("RateLimit-Reset")).toBe("60");
    expect(next.body).toMatchObject({ contacts: [], total: 0 });
  }, 60_000);

  it("is exact under concurrency: of 1100 simultaneous requests exactly 1000 pass", async () => {
    const { request } = appAt(nextMinute() + 500);
    const p = await newProject("burst");
    const results = await Promise.all(Array.from({ length: 1100 }, () => request(p.secretKey)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1000);
    expect(statuses.filter((s) => s === 429)).toHaveLength(100);
  }, 60_000);
});

/** The app with a ProjectLimiter namespace that counts the calls made to its objects. */
function countingApp(start: number) {
  const clock = { now: start };
  const app = createApp({ now: () => clock.now });
  const calls: string[] = [];
  const limiterEnv = {
    ...env,
    PROJECT_LIMITER: {
      idFromName: (name: string) => env.PROJECT_LIMITER.idFromName(name),
      get: (id: DurableObjectId) => {
        const real = env.PROJECT_LIMITER.get(id);
        return {
          leaseApi: (limit: number, now: number, want: number) => {
            calls.push(`leaseApi(${want})`);
            return real.leaseApi(limit, now, want);
          },
        };
      },
    },
  } as unknown as typeof env;
  const request = (key: string) => call("GET", CHEAP, { key, handler: (r, e, ctx) => app.fetch(r, e, ctx), env: limiterEnv, waitForBackground: false });
  return { clock, calls, request };
}

describe("rate-limit leases", () => {
  it("a busy isolate asks the Durable Object for slots a few at a time, not once per request, and stays exact", async () => {
    const { calls, request } = countingApp(nextMinute() + 1_000);
    const p = await newProject("leases");
    const remaining: number[] = [];
    for (let i = 0; i < 200; i++) {
      const r = await request(p.secretKey);
      expect(r.status).toBe(200);
      remaining.push(Number(r.headers.get("RateLimit-Remaining")));
    }
    // Leases of 1, 2, 4, 8, 16 (31 slots), then 20 at a time (a fiftieth of the limit): 14 calls for 200 requests.
    expect(calls.slice(0, 6)).toEqual(["leaseApi(1)", "leaseApi(2)", "leaseApi(4)", "leaseApi(8)", "leaseApi(16)", "leaseApi(20)"]);
    expect(calls).toHaveLength(14);
    // One isolate: RateLimit-Remaining counts down by one per request, as without leases.
    expect(remaining).toEqual(Array.from({ length: 200 }, (_, i) => LIMIT - 1 - i));
  }, 60_000);

  it("across isolates a window never admits more than the limit; unused leased slots are the only loss, at most a lease per isolate", async () => {
    const minute = nextMinute();
    const a = countingApp(minute + 1_000);
    const b = countingApp(minute + 1_000);
    const p = await newProject("two-isolates");
    let admitted = 0;
    for (let i = 0; i < 700; i++) {
      for (const isolate of [a, b]) if ((await isolate.request(p.secretKey)).status === 200) admitted++;
    }
    // 1400 requests for a limit of 1000: both isolates end up refused.
    expect((await a.request(p.secretKey)).status).toBe(429);
    expect((await b.request(p.secretKey)).status).toBe(429);
    expect(admitted).toBeLessThanOrEqual(LIMIT);
    expect(admitted).toBeGreaterThanOrEqual(LIMIT - 2 * 20);
    // The next window starts afresh in both.
    a.clock.now = b.clock.now = minute + MINUTE;
    expect((await a.request(p.secretKey)).status).toBe(200);
    expect((await b.request(p.secretKey)).status).toBe(200);
  }, 120_000);
});

describe("a lease another request asked for", () => {
  it("is waited on only briefly: when it never settles (that request was cancelled), the next request leases for itself", async () => {
    const at = nextMinute() + 1_000;
    const app = createApp({ now: () => at });
    let calls = 0;
    const hungEnv = {
      ...env,
      PROJECT_LIMITER: {
        idFromName: (name: string) => env.PROJECT_LIMITER.idFromName(name),
        get: (id: DurableObjectId) => {
          const real = env.PROJECT_LIMITER.get(id);
          return {
            // The first lease never answers, as when the request that asked for it is cancelled.
            leaseApi: (limit: number, now: number, want: number) => (++calls === 1 ? new Promise(() => {}) : real.leaseApi(limit, now, want)),
          };
        },
      },
    } as unknown as typeof env;
    const p = await newProject("hung-lease");
    const request = () => call("GET", CHEAP, { key: p.secretKey, handler: (r, e, ctx) => app.fetch(r, e, ctx), env: hungEnv, waitForBackground: false });
    // Whichever request asks first holds the hung lease; the other is answered on a lease of its own.
    const answered = await Promise.race([request(), request()]);
    expect(answered.status).toBe(200);
    expect(answered.headers.get("RateLimit-Remaining")).toBe(String(LIMIT - 1));
    expect(calls).toBe(2);
  });
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

  it("leases at most what is left of the window", async () => {
    const stub = env.PROJECT_LIMITER.get(env.PROJECT_LIMITER.idFromName("lease-rest"));
    await runInDurableObject(stub, (limiter: ProjectLimiter) => {
      const minute = 29_000_002 * 60_000;
      expect(limiter.leaseApi(10, minute + 1_000, 8)).toEqual({ granted: 8, limit: 10, remaining: 2, resetSeconds: 59, windowStart: minute });
      expect(limiter.leaseApi(10, minute + 2_000, 8)).toMatchObject({ granted: 2, remaining: 0 });
      expect(limiter.leaseApi(10, minute + 3_000, 8)).toMatchObject({ granted: 0, remaining: 0 });
      expect(limiter.hitApi(10, minute + 4_000).allowed).toBe(false);
      expect(limiter.leaseApi(10, minute + 60_000, 3)).toMatchObject({ granted: 3, remaining: 7, windowStart: minute + 60_000 });
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
