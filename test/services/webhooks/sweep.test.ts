import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../../src/env";
import { newId } from "../../../src/lib/ids";
import { runScheduledJobs } from "../../../src/scheduled";
import { DEAD_ATTEMPT_ERROR } from "../../../src/services/webhooks/attempts";
import type { WebhookEventType } from "../../../src/schemas/webhooks";
import { WriteBatch } from "../../../src/store/batch";
import { recordWebhookEvent } from "../../../src/store/webhooks/events";
import { heldQueue, receiver, webhookProject } from "../../support/webhooks";
import { d1Outage } from "../../fakes/d1-outage";

afterEach(() => vi.restoreAllMocks());

const URL_ = "https://hooks.example.net/in";
const MINUTE = 60_000;

/** Records an event the way a write batch does (the statement from store/webhooks/events), and returns its id if one was written. */
async function record(projectId: string, type: WebhookEventType, data: unknown = { n: 1 }) {
  const batch = new WriteBatch(env.DB);
  const recorded = batch.add(recordWebhookEvent(env.DB, { id: newId(), projectId, type, data, at: new Date() }));
  return (await batch.run()).eventIds(recorded)[0];
}

describe("recording an event", () => {
  it("writes nothing unless an enabled endpoint of the project subscribes to the type", async () => {
    receiver();
    const p = await webhookProject();
    const other = await webhookProject("other");
    expect(await record(p.id, "email.sent")).toBeUndefined();
    const hook = await p.createWebhook({ url: URL_, events: ["email.sent", "email.bounced"] });
    await other.createWebhook({ url: URL_ });
    expect(await record(p.id, "contact.created")).toBeUndefined();
    expect(await record(p.id, "email.sent")).toEqual(expect.any(String));
    await p.call("PATCH", `/webhooks/${hook.id}`, { enabled: false });
    expect(await record(p.id, "email.sent")).toBeUndefined();
    await p.call("PATCH", `/webhooks/${hook.id}`, { enabled: true, events: [] });
    expect(await record(p.id, "contact.created")).toEqual(expect.any(String));
  });

  it("fans out only to the endpoints that subscribe to the type, one delivery each", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const all = await p.createWebhook({ url: `${URL_}/all` });
    const bounces = await p.createWebhook({ url: `${URL_}/bounces`, events: ["email.bounced"] });
    const sent = await p.createWebhook({ url: `${URL_}/sent`, events: ["email.sent"] });
    const off = await p.createWebhook({ url: `${URL_}/off`, enabled: false });
    const q = heldQueue();
    const eventId = await record(p.id, "email.sent", { emailId: "e1" });
    await q.deliver([{ body: { kind: "event", eventId, projectId: p.id } }]);
    // A redelivered fan-out makes no second delivery.
    await q.deliver([{ body: { kind: "event", eventId, projectId: p.id } }]);
    await q.drain();
    expect(calls.map((c) => c.url).sort()).toEqual([`${URL_}/all`, `${URL_}/sent`]);
    expect(await p.deliveries(all.id)).toMatchObject([{ eventId, type: "email.sent", status: "SUCCEEDED" }]);
    expect(await p.deliveries(sent.id)).toMatchObject([{ eventId, type: "email.sent", status: "SUCCEEDED" }]);
    expect(await p.deliveries(bounces.id)).toEqual([]);
    expect(await p.deliveries(off.id)).toEqual([]);
    const body = new Webhook(sent.secret).verify(calls.find((c) => c.url.endsWith("/sent"))!.body, calls.find((c) => c.url.endsWith("/sent"))!.headers);
    expect(body).toEqual({ type: "email.sent", timestamp: expect.any(String), data: { emailId: "e1" } });
  });
});

describe("first attempts", () => {
  it("a fan-out makes up to 100 first attempts itself, at most 6 calls at a time, and queues the rest", async () => {
    let inFlight = 0;
    let most = 0;
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_, events: ["contact.created"] });
    const fetchSpy = vi.mocked(globalThis.fetch);
    const answer = fetchSpy.getMockImplementation()!;
    fetchSpy.mockImplementation(async (input, init) => {
      inFlight++;
      most = Math.max(most, inFlight);
      try {
        await new Promise((r) => setTimeout(r, 5));
        return await answer(input, init);
      } finally {
        inFlight--;
      }
    });
    const q = heldQueue();
    const ids: string[] = [];
    for (let i = 0; i < 101; i++) ids.push(await record(p.id, "contact.created", { n: i }));
    await q.deliver(ids.map((eventId) => ({ body: { kind: "event" as const, eventId, projectId: p.id } })));
    expect(calls.filter((c) => c.url === URL_)).toHaveLength(100);
    expect(most).toBeLessThanOrEqual(6);
    expect(most).toBeGreaterThan(1);
    const rest = q.take();
    expect(rest.map((m) => m.body)).toEqual([{ kind: "delivery", deliveryId: expect.any(String), projectId: p.id, attempt: 1 }]);
    await q.deliver(rest);
    expect(calls.filter((c) => c.url === URL_)).toHaveLength(101);
    expect(new Set(calls.map((c) => (JSON.parse(c.body) as { data: { n: number } }).data.n)).size).toBe(101);
    const succeeded = await p.deliveries(hook.id, "?status=SUCCEEDED&limit=100");
    expect(succeeded).toHaveLength(100);
    expect(succeeded.every((d: { attempts: number }) => d.attempts === 1)).toBe(true);
  });
});

describe("the cron", () => {
  it("hands over events whose request never did (after a grace period), and they are delivered", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    await p.createWebhook({ url: URL_ });
    const eventId = await record(p.id, "contact.created", { id: "c1" });
    const q = heldQueue();
    // Within the grace period the request's own hand-over is trusted.
    await runScheduledJobs(q.env, { scheduledTime: Date.now() });
    expect(q.messages.filter((m) => m.body.kind === "event" && m.body.eventId === eventId)).toEqual([]);
    await runScheduledJobs(q.env, { scheduledTime: Date.now() + MINUTE });
    expect(q.messages.filter((m) => m.body.kind === "event" && m.body.eventId === eventId)).toHaveLength(1);
    await q.drain();
    expect(calls.filter((c) => JSON.parse(c.body).data.id === "c1")).toHaveLength(1);
    // Fanned out: later ticks leave it alone.
    await runScheduledJobs(q.env, { scheduledTime: Date.now() + 10 * MINUTE });
    expect(q.messages.filter((m) => m.body.kind === "event" && m.body.eventId === eventId)).toEqual([]);
  });

  it("queues again an event whose message was lost; a fan-out that dies after creating its deliveries leaves them to the sweep", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const eventId = await record(p.id, "contact.updated", { id: "c2" });
    const q = heldQueue();
    await runScheduledJobs(q.env, { scheduledTime: Date.now() + MINUTE });
    q.take(); // lost
    await runScheduledJobs(q.env, { scheduledTime: Date.now() + 2 * MINUTE });
    expect(q.messages).toEqual([]);
    await runScheduledJobs(q.env, { scheduledTime: Date.now() + 7 * MINUTE });
    const again = q.take();
    expect(again.map((m) => m.body)).toContainEqual({ kind: "event", eventId, projectId: p.id });
    // The fan-out's write (the delivery, its first attempt claimed) commits, then the invocation dies before any call.
    const dying = d1Outage({ batch: 2, afterCommit: true, message: "the invocation died (test)" });
    const died = await q.deliver(again, { env: { ...q.env, DB: dying } as Env });
    expect(died.retryMessages.length).toBeGreaterThan(0);
    const mine = () => calls.filter((c) => JSON.parse(c.body).data.id === "c2");
    expect(mine()).toHaveLength(0);
    expect(await p.deliveries(hook.id)).toMatchObject([{ status: "PENDING", attempts: 1 }]);
    // The redelivered message finds the delivery made: it neither makes another nor sends it.
    await q.deliver(again);
    expect(mine()).toHaveLength(0);
    expect(await p.deliveries(hook.id)).toHaveLength(1);
    // Minutes later the cron counts the silent attempt as failed, and the next tick queues attempt 2.
    await runScheduledJobs(q.env, { scheduledTime: Date.now() + 10 * MINUTE });
    expect(await p.deliveries(hook.id)).toMatchObject([{ status: "PENDING", attempts: 1, lastError: DEAD_ATTEMPT_ERROR }]);
    await runScheduledJobs(q.env, { scheduledTime: Date.now() + 11 * MINUTE });
    await q.drain();
    expect(await p.deliveries(hook.id)).toMatchObject([{ status: "SUCCEEDED", attempts: 2 }]);
    expect(mine()).toHaveLength(1);
  });

  it("retention prunes deliveries older than WEBHOOK_RETENTION_DAYS (default 30)", async () => {
    receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    await q.drain();
    expect(await p.deliveries(hook.id)).toHaveLength(1);
    await runScheduledJobs(q.env, { scheduledTime: Date.now() + 29 * 86_400_000 });
    expect(await p.deliveries(hook.id)).toHaveLength(1);
    await runScheduledJobs(q.env, { scheduledTime: Date.now() + 32 * 86_400_000 });
    expect(await p.deliveries(hook.id)).toEqual([]);
    const events = await env.DB.prepare("SELECT count(*) AS n FROM webhook_events WHERE project_id = ?1").bind(p.id).first<{ n: number }>();
    expect(events?.n).toBe(0);
  });
});

describe("the per-minute cap", () => {
  it("attempts past WEBHOOK_DELIVERIES_PER_MINUTE are not counted, send no message, and the next minute's drain queues them", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    const capped = { ...q.env, WEBHOOK_DELIVERIES_PER_MINUTE: "2" } as Env;
    for (let i = 0; i < 3; i++) await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    await q.deliver(q.take(), { env: capped });
    expect(calls).toHaveLength(2);
    // Nothing goes round the queue: the third waits PENDING, unattempted.
    expect(q.take()).toEqual([]);
    const pending = await p.deliveries(hook.id, "?status=PENDING");
    expect(pending).toMatchObject([{ attempts: 0, lastError: null }]);
    // The next minute's tick queues it (the cap's new window), and it is sent.
    await runScheduledJobs(capped, { scheduledTime: Date.now() + MINUTE });
    const drained = q.take().filter((m) => m.body.kind === "delivery" && m.body.projectId === p.id);
    expect(drained.map((m) => m.body)).toEqual([{ kind: "delivery", deliveryId: pending[0].id, projectId: p.id, attempt: 1 }]);
    await q.deliver(drained, { env: capped });
    expect(calls).toHaveLength(3);
    expect(await p.deliveries(hook.id, "?status=SUCCEEDED")).toHaveLength(3);
  });
});
