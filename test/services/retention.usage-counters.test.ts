import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env";
import worker from "../../src/index";
import { call, expectError, newProject, type JsonResponse } from "../support/http";
import type { ContactList } from "../support/api";

afterEach(() => {
  vi.restoreAllMocks();
});

const limits = { QUOTA_CONTACTS: "3", QUOTA_EVENTS_PER_DAY: "3" };
const request = <T = unknown>(key: string, method: string, path: string, body?: unknown): Promise<JsonResponse<T>> =>
  call<T>(method, path, { key, body, env: { ...env, ...limits } as Env });

const today = () => Math.floor(Date.now() / 86_400_000);

/** Cron ticks a minute apart, as many as it takes for every page of projects to be recounted once. */
async function cronTicksOverEveryProject() {
  const total = (await env.DB.prepare("SELECT count(*) AS n FROM projects").first<{ n: number }>())!.n;
  const start = Math.floor(Date.now() / 60_000) * 60_000;
  for (let i = 0; i < Math.ceil(total / 20); i++) {
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ scheduledTime: new Date(start + i * 60_000), cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
  }
}

describe("the cron reconciles the usage counters kept by triggers", () => {
  it("a drifted contacts or events counter is recounted, logged, and the quotas then answer by the real counts", async () => {
    const p = await newProject();
    const other = await newProject();
    expect((await request(p.secretKey, "POST", "/contacts", { email: "a@example.com" })).status).toBe(201);
    expect((await request(p.secretKey, "POST", "/contacts", { email: "b@example.com" })).status).toBe(201);
    expect((await request(p.publicKey, "POST", "/v1/track", { email: "a@example.com", event: "visit" })).status).toBe(200);
    expect((await request(other.secretKey, "POST", "/contacts", { email: "o@example.com" })).status).toBe(201);

    // Counters drift up (as a lost trigger decrement or a hand edit would leave them): the quotas refuse too early.
    await env.DB.batch([
      env.DB.prepare("UPDATE project_usage SET contacts = 3 WHERE project_id = ?").bind(p.id),
      env.DB.prepare("UPDATE project_daily_usage SET events = 3 WHERE project_id = ? AND day = ?").bind(p.id, today()),
    ]);
    expectError(await request(p.secretKey, "POST", "/contacts", { email: "c@example.com" }), 403, "QUOTA_EXCEEDED");
    expectError(await request(p.publicKey, "POST", "/v1/track", { email: "a@example.com", event: "visit" }), 429, "QUOTA_EXCEEDED");

    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    await cronTicksOverEveryProject();
    const warnings = warn.mock.calls.map((args) => String(args[0]));
    const mine = warnings.filter((w) => w.includes(p.id));
    expect(mine.join("\n")).toContain("contacts 3 -> 2");
    expect(mine.join("\n")).toContain("events 3 -> 1");
    // A project whose counters are right is not reported.
    expect(warnings.filter((w) => w.includes(other.id))).toEqual([]);

    // The quotas now count what is there: one more contact, two more events today.
    expect((await request(p.secretKey, "POST", "/contacts", { email: "c@example.com" })).status).toBe(201);
    expect((await request(p.publicKey, "POST", "/v1/track", { email: "a@example.com", event: "visit" })).status).toBe(200);
    expect((await request(p.publicKey, "POST", "/v1/track", { email: "a@example.com", event: "visit" })).status).toBe(200);
    expectError(await request(p.publicKey, "POST", "/v1/track", { email: "a@example.com", event: "visit" }), 429, "QUOTA_EXCEEDED");

    // Drift down lets a project past its quota until the cron recounts.
    await env.DB.prepare("UPDATE project_usage SET contacts = 0 WHERE project_id = ?").bind(p.id).run();
    warn.mockClear();
    await cronTicksOverEveryProject();
    expect(warn.mock.calls.map((args) => String(args[0])).filter((w) => w.includes(p.id))).toEqual([expect.stringContaining("contacts 0 -> 3")]);
    expectError(await request(p.secretKey, "POST", "/contacts", { email: "d@example.com" }), 403, "QUOTA_EXCEEDED");
    expect((await request<ContactList>(p.secretKey, "GET", "/contacts")).body.total).toBe(3);
  });
});
