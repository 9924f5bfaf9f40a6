import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../../src/env";
import { newId } from "../../../src/lib/ids";
import { DEAD_ATTEMPT_ERROR, RETRY_SCHEDULE_SECONDS } from "../../../src/services/webhooks/attempts";
import { runWebhookJobs } from "../../../src/services/webhooks/sweep";
import type { WebhookEventType } from "../../../src/schemas/webhooks";
import { WriteBatch } from "../../../src/store/batch";
import { recordWebhookEvent } from "../../../src/store/webhooks/events";
import type { WebhookDelivery } from "../../support/api";
import { expectError } from "../../support/http";
import { heldQueue, receiver, webhookProject } from "../../support/webhooks";
import { d1Outage } from "../../fakes/d1-outage";

/** Webhook limits: stored bytes, bounded reads, the per-minute cap, backlog pacing, one lane per project, and a delivery's final state after a crash. */

afterEach(() => vi.restoreAllMocks());

const URL_ = "https://hooks.example.net/in";
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

async function record(projectId: string, type: WebhookEventType, data: unknown = { n: 1 }) {
  const batch = new WriteBatch(env.DB);
  const recorded = batch.add(recordWebhookEvent(env.DB, { id: newId(), projectId, type, data, at: new Date() }));
  return (await batch.run()).eventIds(recorded)[0];
}

const scalar = async (sql: string, ...params: unknown[]) =>
  Number(
    (
      await env.DB.prepare(sql)
        .bind(...params)
        .first<{ v: number }>()
    )?.v ?? 0,
  );
const storedBytes = (projectId: string) => scalar("SELECT stored_bytes AS v FROM projects WHERE id = ?1", projectId);
const payloadBytes = (projectId: string) =>
  scalar("SELECT coalesce(sum(length(CAST(payload AS BLOB))), 0) AS v FROM webhook_events WHERE project_id = ?1", projectId);
const contactBytes = (projectId: string) => scalar("SELECT coalesce(sum(length(CAST(data AS BLOB))), 0) AS v FROM contacts WHERE project_id = ?1", projectId);
const eventCount = (projectId: string) => scalar("SELECT count(*) AS v FROM webhook_events WHERE project_id = ?1", projectId);

/** A D1 whose `n`-th batch throws before running (the invocation died before it committed). */
const dyingAfter = (n: number) => d1Outage({ batch: n, message: "the invocation died (test)" });

describe("webhook events count in the project's stored bytes", () => {
  it("50 PATCHes grow stored_bytes by the snapshots they store; at the quota a PATCH is 403 and writes nothing", async () => {
    receiver();
    const p = await webhookProject();
    await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    const created = await p.call<{ id: string }>("POST", "/contacts", { email: "bulk@example.org", data: { a: "x".repeat(31_000) } }, q.env);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id;
    expect((await p.call("PATCH", `/contacts/${id}`, { data: { b: "y".repeat(31_000) } }, q.env)).status).toBe(200);
    const before = { stored: await storedBytes(p.id), payload: await payloadBytes(p.id), contacts: await contactBytes(p.id) };
    for (let i = 1; i <= 50; i++) expect((await p.call("PATCH", `/contacts/${id}`, { data: { n: i } }, q.env)).status).toBe(200);
    const after = { stored: await storedBytes(p.id), payload: await payloadBytes(p.id), contacts: await contactBytes(p.id) };
    // 50 snapshots of about 62 KB each, every byte counted (the contact's own data changed by a few bytes).
    expect(after.payload - before.payload).toBeGreaterThan(50 * 62_000);
    expect(after.stored - before.stored).toBe(after.payload - before.payload + (after.contacts - before.contacts));

    // At the quota: a PATCH that leaves the data as it is still records a 62 KB snapshot, so it is refused, whole.
    const atQuota = { ...q.env, QUOTA_STORED_BYTES: String(after.stored) } as Env;
    const events = await eventCount(p.id);
    const refused = await p.call("PATCH", `/contacts/${id}`, { data: { n: 50 }, subscribed: false }, atQuota);
    expectError(refused, 403, "QUOTA_EXCEEDED");
    expect(await eventCount(p.id)).toBe(events);
    expect(await storedBytes(p.id)).toBe(after.stored);
    const contact = await p.call<{ subscribed: boolean; data: Record<string, unknown> }>("GET", `/contacts/${id}`);
    expect(contact.body).toMatchObject({ subscribed: true, data: { n: 50 } });
    expect(q.messages).toHaveLength(52);
  });

  it("POST /contacts and /v1/track check the snapshots they may record up front: near the quota they are 403 and write nothing", async () => {
    receiver();
    const p = await webhookProject();
    const q = heldQueue();
    const created = await p.call<{ id: string }>("POST", "/contacts", { email: "big@example.org", data: { a: "x".repeat(30_000) } }, q.env);
    expect(created.status).toBe(201);
    // No endpoint yet: with room for the write's own bound (its data patch), it is allowed.
    const stored = await storedBytes(p.id);
    const tight = { ...q.env, QUOTA_STORED_BYTES: String(stored + 30_100) } as Env;
    expect((await p.call("POST", "/contacts", { email: "big@example.org", data: { a: "x".repeat(30_000) } }, tight)).status).toBe(200);
    // With an endpoint on contact.*, the same write would store a 30 KB snapshot: refused.
    await p.createWebhook({ url: URL_, events: ["contact.updated"] });
    const events = await eventCount(p.id);
    expectError(await p.call("POST", "/contacts", { email: "big@example.org", data: { a: "x".repeat(30_000) } }, tight), 403, "QUOTA_EXCEEDED");
    expectError(await p.call("POST", "/v1/track", { email: "big@example.org", event: "login" }, tight), 403, "QUOTA_EXCEEDED");
    expect(await eventCount(p.id)).toBe(events);
    expect(await storedBytes(p.id)).toBe(stored);
    // With room for it, it goes through and is counted.
    expect((await p.call("POST", "/contacts", { email: "big@example.org" }, q.env)).status).toBe(200);
    expect(await storedBytes(p.id)).toBeGreaterThan(stored + 30_000);
  });

  it("deliveries count too, and retention gives every byte back", async () => {
    receiver(() => 500);
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    const base = await storedBytes(p.id);
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    await q.deliver(q.take());
    const [d] = await p.deliveries(hook.id);
    expect(d.lastError).toBe("HTTP 500: ok");
    expect(await storedBytes(p.id)).toBe(base + (await payloadBytes(p.id)) + 200 + "HTTP 500: ok".length);
    await runWebhookJobs(q.env); // nothing to do yet
    const { pruneWebhookDeliveries } = await import("../../../src/services/webhooks/sweep");
    await pruneWebhookDeliveries(q.env, new Date(Date.now() + 40 * 24 * HOUR));
    expect(await storedBytes(p.id)).toBe(base);
  });
});

describe("bounded reads, and an attempt counted before the call", () => {
  it("a failing answer's 100 MB body is not read: at most a few KB, 200 characters kept", async () => {
    let pulled = 0;
    receiver(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              pulled += 65_536;
              controller.enqueue(new Uint8Array(65_536).fill(65));
              if (pulled >= 100 * 1024 * 1024) controller.close();
            },
          }),
          { status: 500 },
        ),
    );
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    await q.deliver(q.take());
    const [d] = await p.deliveries(hook.id);
    expect(d).toMatchObject({ status: "PENDING", attempts: 1, lastStatusCode: 500, lastError: `HTTP 500: ${"A".repeat(200)}` });
    expect(pulled).toBeLessThanOrEqual(4 * 65_536);
  });

  it("a body that trickles is cut after a second; an answer whose headers do not come within the connect timeout fails", async () => {
    receiver(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            start(controller) {
              controller.enqueue(new TextEncoder().encode("s"));
            },
            pull: () => new Promise(() => undefined),
          }),
          { status: 500 },
        ),
    );
    const fetchSpy = vi.mocked(globalThis.fetch);
    const answer = fetchSpy.getMockImplementation()!;
    fetchSpy.mockImplementation((input, init) => (String(input).startsWith(`${URL_}/silent`) ? new Promise(() => undefined) : answer(input, init)));
    const p = await webhookProject();
    const trickle = await p.createWebhook({ url: `${URL_}/trickle` });
    const silent = await p.createWebhook({ url: `${URL_}/silent` });
    const q = heldQueue();
    const quick = { ...q.env, WEBHOOK_CONNECT_TIMEOUT_MS: "300" } as Env;
    for (const [hook, lastError] of [
      [trickle, "HTTP 500: s"],
      [silent, "No answer within 0.3 s"],
    ] as const) {
      await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
      const t0 = Date.now();
      await q.deliver(q.take(), { env: quick });
      expect(Date.now() - t0).toBeLessThan(3000);
      const [d] = await p.deliveries(hook.id);
      expect(d).toMatchObject({ attempts: 1, lastError, lastStatusCode: hook === trickle ? 500 : null });
    }
  });

  it("a delivery whose every invocation dies ends FAILED after the schedule by the cron alone, and starts its endpoint's failure streak", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    let tick = Date.now();
    for (let i = 0; i < 11; i++) {
      const mine = q.take().filter((m) => m.body.projectId === p.id);
      expect(mine, `attempt ${i + 1}`).toHaveLength(1);
      // The claim commits, the call is made, then the invocation dies before its outcome is written.
      const died = await q.deliver(mine, { env: { ...q.env, DB: dyingAfter(2) } as Env });
      expect(died.retryMessages).toHaveLength(1);
      await q.deliver(mine); // the redelivered message claims nothing
      tick += 10 * MINUTE;
      await runWebhookJobs(q.env, new Date(tick)); // the silent attempt counts as failed
      const [d] = await p.deliveries(hook.id);
      expect(d).toMatchObject({ attempts: i + 1, lastError: DEAD_ATTEMPT_ERROR, status: i < 10 ? "PENDING" : "FAILED" });
      tick += (RETRY_SCHEDULE_SECONDS[i] ?? 0) * 1000 + MINUTE;
      await runWebhookJobs(q.env, new Date(tick)); // the drain queues the next attempt when due
    }
    expect(q.take().filter((m) => m.body.projectId === p.id)).toEqual([]);
    expect(calls).toHaveLength(11);
    const failingSince = await scalar("SELECT failing_since AS v FROM webhook_endpoints WHERE id = ?1", hook.id);
    expect(failingSince).toBeGreaterThan(0);
    expect((await p.call<{ enabled: boolean }>("GET", `/webhooks/${hook.id}`)).body.enabled).toBe(true);
  });
});

describe("the per-minute cap is atomic across invocations", () => {
  it("two invocations at once make no more calls together than the cap", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    const capped = { ...q.env, WEBHOOK_DELIVERIES_PER_MINUTE: "3" } as Env;
    for (let i = 0; i < 10; i++) await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    const held = q.take();
    await Promise.all([q.deliver(held.slice(0, 5), { env: capped }), q.deliver(held.slice(5), { env: capped })]);
    expect(calls).toHaveLength(3);
    expect(await p.deliveries(hook.id, "?status=SUCCEEDED")).toHaveLength(3);
    expect(await p.deliveries(hook.id, "?status=PENDING")).toHaveLength(7);
    expect(q.messages).toEqual([]);
  });
});

describe("a backlog over the cap is drained at the cap's pace", () => {
  it("queue messages over a few drain rounds are the calls made, not the backlog", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_, events: ["contact.created"] });
    const q = heldQueue();
    const capped = { ...q.env, WEBHOOK_DELIVERIES_PER_MINUTE: "3" } as Env;
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await record(p.id, "contact.created", { n: i }));
    await q.deliver(
      ids.map((eventId) => ({ body: { kind: "event" as const, eventId, projectId: p.id } })),
      { env: capped },
    );
    expect(calls).toHaveLength(3);
    // The 17 over the cap wait PENDING with no message.
    expect(q.take()).toEqual([]);
    let messages = 0;
    const callsBefore = calls.length;
    for (let round = 1; round <= 4; round++) {
      await runWebhookJobs(capped, new Date(Date.now() + round * MINUTE));
      const mine = q.take().filter((m) => m.body.projectId === p.id);
      messages += mine.length;
      await q.deliver(mine, { env: capped });
    }
    expect(calls.length - callsBefore).toBe(12);
    expect(messages).toBe(12);
    expect(await p.deliveries(hook.id, "?status=PENDING&limit=100")).toHaveLength(5);
  });

  it("past WEBHOOK_PENDING_PER_PROJECT a new event's deliveries are FAILED at once with the reason", async () => {
    receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_, events: ["contact.created"] });
    const q = heldQueue();
    const capped = { ...q.env, WEBHOOK_DELIVERIES_PER_MINUTE: "1", WEBHOOK_PENDING_PER_PROJECT: "5" } as Env;
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await record(p.id, "contact.created", { n: i }));
    await q.deliver(
      ids.map((eventId) => ({ body: { kind: "event" as const, eventId, projectId: p.id } })),
      { env: capped },
    );
    const failed = await p.deliveries(hook.id, "?status=FAILED");
    expect(failed).toHaveLength(3);
    for (const d of failed) {
      expect(d).toMatchObject({ attempts: 0, nextAttemptAt: null });
      expect(d.lastError).toBe("Not sent: the project had 5 deliveries pending (WEBHOOK_PENDING_PER_PROJECT)");
    }
    expect(await p.deliveries(hook.id, "?status=SUCCEEDED")).toHaveLength(1);
    expect(await p.deliveries(hook.id, "?status=PENDING")).toHaveLength(4);
  });
});

describe("one lane per project", () => {
  it("another project's endpoint that never answers delays neither this project's call in the same batch nor the next batch", async () => {
    const started: Record<string, number> = {};
    let silentCalls = 0;
    receiver();
    const fetchSpy = vi.mocked(globalThis.fetch);
    const answer = fetchSpy.getMockImplementation()!;
    fetchSpy.mockImplementation((input, init) => {
      const url = String(input);
      if (url.startsWith("https://other.example.net/")) {
        silentCalls++;
        return new Promise(() => undefined);
      }
      if (url.startsWith(URL_)) started[url] ??= Date.now();
      return answer(input, init);
    });
    const a = await webhookProject("a");
    const b = await webhookProject("b");
    const hookA = await a.createWebhook({ url: URL_ });
    const hookB = await b.createWebhook({ url: "https://other.example.net/tarpit" });
    const q = heldQueue();
    const quick = { ...q.env, WEBHOOK_CONNECT_TIMEOUT_MS: "1000" } as Env;
    for (let i = 0; i < 12; i++) await b.call("POST", `/webhooks/${hookB.id}/test`, undefined, q.env);
    await a.call("POST", `/webhooks/${hookA.id}/test`, undefined, q.env);
    const held = q.take();
    expect(held.at(-1)!.body.projectId).toBe(a.id);
    const t0 = Date.now();
    await q.deliver(held, { env: quick });
    // A's call went out at once; the batch ended when B's first calls gave up (1 s), not 12 calls later.
    expect(started[URL_] - t0).toBeLessThan(1000);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect((await a.deliveries(hookA.id))[0]).toMatchObject<Partial<WebhookDelivery>>({ status: "SUCCEEDED" });
    const bDeliveries = await b.deliveries(hookB.id, "?limit=100");
    const tried = bDeliveries.filter((d) => d.attempts === 1);
    expect(tried.length).toBe(silentCalls);
    expect(silentCalls).toBeLessThanOrEqual(6);
    for (const d of tried) expect(d.lastError).toBe("No answer within 1 s");
    // The rest were not attempted: given back, due when B's endpoint is tried again (10 s).
    const waiting = bDeliveries.filter((d) => d.attempts === 0);
    expect(waiting).toHaveLength(12 - silentCalls);
    for (const d of waiting) {
      expect(d).toMatchObject({ status: "PENDING", lastError: null });
      expect(Date.parse(d.nextAttemptAt!) - t0).toBeGreaterThan(9000);
    }
    // The next batch with B's deliveries in it makes no call to B while it is marked slow, and ends at once.
    await b.call("POST", `/webhooks/${hookB.id}/test`, undefined, q.env);
    await a.call("POST", `/webhooks/${hookA.id}/test`, undefined, q.env);
    const t1 = Date.now();
    await q.deliver(q.take(), { env: quick });
    expect(Date.now() - t1).toBeLessThan(1000);
    expect(silentCalls).toBeLessThanOrEqual(6);
    expect(await a.deliveries(hookA.id, "?status=SUCCEEDED")).toHaveLength(2);
  });
});
