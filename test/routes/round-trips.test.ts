import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import type { Env } from "../../src/env";
import { countingD1, type D1Stats } from "../../src/lib/d1-counter";
import { BASE, newProject, type JsonResponse } from "../helpers";

/**
 * What a request costs in D1, pinned: every request goes through the Worker's
 * app with its D1 binding wrapped by the counter (src/lib/d1-counter.ts), and
 * the count includes the work after the response (waitUntil). A change that
 * adds a round trip to one of these paths fails here.
 */
function countingApp(settings: Partial<Env> = {}) {
  const stats: D1Stats = { statements: 0, batches: 0, roundTrips: 0, captureStatements: 0 };
  const app = createApp();
  const countedEnv = { ...env, ...settings, DB: countingD1(env.DB, stats) } as Env;
  async function request(method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(BASE + path, {
        method,
        headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
      countedEnv,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  }
  /** The D1 cost of one call: round trips, batches and statements. */
  async function cost(call: () => Promise<JsonResponse>, expectStatus: number) {
    Object.assign(stats, { statements: 0, batches: 0, roundTrips: 0, captureStatements: 0 });
    const res = await call();
    expect(res.status, JSON.stringify(res.body)).toBe(expectStatus);
    return { roundTrips: stats.roundTrips, batches: stats.batches, statements: stats.statements };
  }
  return { request, cost };
}

describe("D1 round trips per request (warm isolate: the key is cached)", () => {
  it("POST /v1/track: one round trip, new contact or existing, public or secret key", async () => {
    const p = await newProject();
    const { request, cost } = countingApp();
    // The first request of a key looks it up: one round trip more.
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "visit" }), 200)).toMatchObject({ roundTrips: 2 });
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "b@example.com", event: "visit" }), 200)).toMatchObject({ roundTrips: 1, batches: 1 });
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "b@example.com", event: "again" }), 200)).toMatchObject({ roundTrips: 1, batches: 1 });
    await request("GET", "/contacts?limit=1", p.secretKey);
    expect(
      await cost(() => request("POST", "/v1/track", p.secretKey, { email: "b@example.com", event: "paid", data: { plan: "pro", tmp: { value: 1, persistent: false } } }), 200),
    ).toMatchObject({ roundTrips: 1, batches: 1 });
  });

  it("POST /v1/track refused by a quota: one round trip (the guard in the batch names the quota)", async () => {
    const p = await newProject();
    const { request, cost } = countingApp({ QUOTA_EVENTS_PER_DAY: "1" } as Partial<Env>);
    expect((await request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "visit" })).status).toBe(200);
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "visit" }), 429)).toMatchObject({ roundTrips: 1 });
  });

  it("POST /contacts: one round trip, created or updated", async () => {
    const p = await newProject();
    const { request, cost } = countingApp();
    expect(await cost(() => request("POST", "/contacts", p.secretKey, { email: "a@example.com" }), 201)).toMatchObject({ roundTrips: 2 });
    expect(await cost(() => request("POST", "/contacts", p.secretKey, { email: "b@example.com", data: { n: 1 } }), 201)).toMatchObject({ roundTrips: 1, batches: 1 });
    expect(await cost(() => request("POST", "/contacts", p.secretKey, { email: "b@example.com", data: { n: 2 }, subscribed: false }), 200)).toMatchObject({
      roundTrips: 1,
      batches: 1,
    });
  });

  it("a write that starts a workflow hands the trigger over after the response (one round trip more, in waitUntil)", async () => {
    const p = await newProject();
    const { request, cost } = countingApp();
    const workflow = await request("POST", "/workflows", p.secretKey, { name: "w", eventName: "signup", enabled: true, steps: [] });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "visit" }), 200)).toMatchObject({ roundTrips: 2 });
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "visit" }), 200)).toMatchObject({ roundTrips: 1 });
    expect(await cost(() => request("POST", "/v1/track", p.publicKey, { email: "a@example.com", event: "signup" }), 200)).toMatchObject({ roundTrips: 2 });
  });
});
