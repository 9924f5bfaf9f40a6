import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../../src/env";
import { DEAD_ATTEMPT_ERROR } from "../../../src/services/webhooks/attempts";
import { heldQueue, receiver, webhookProject } from "../../support/webhooks";
import { eventually } from "../../support/wait";
import type { WebhookDelivery } from "../../support/api";
import { d1Outage } from "../../fakes/d1-outage";

afterEach(() => vi.restoreAllMocks());

const URL_ = "https://hooks.example.net/in";

describe("delivery through the real queue", () => {
  it("a test event reaches the endpoint signed as Standard Webhooks; the receiver verifies it with the secret", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_, events: ["email.sent"] });
    const res = await p.call<WebhookDelivery>("POST", `/webhooks/${hook.id}/test`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ webhookId: hook.id, type: "webhook.test", status: "PENDING", attempts: 0 });

    const delivered = await eventually(async () => {
      const [d] = await p.deliveries(hook.id);
      expect(d.status).toBe("SUCCEEDED");
      return d;
    });
    expect(delivered).toMatchObject({ id: res.body.id, attempts: 1, lastStatusCode: 200, lastError: null, nextAttemptAt: null });
    expect(calls).toHaveLength(1);
    const [received] = calls;
    expect(received).toMatchObject({ url: URL_, method: "POST" });
    expect(received.headers["content-type"]).toBe("application/json");
    const body = new Webhook(hook.secret).verify(received.body, received.headers) as any;
    expect(body).toEqual({ type: "webhook.test", timestamp: expect.any(String), data: expect.objectContaining({ webhookId: hook.id }) });
    expect(Math.abs(Number(received.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(60);
    // Another secret, or a changed body, does not verify.
    const other = await p.createWebhook({ url: `${URL_}/other` });
    expect(() => new Webhook(other.secret).verify(received.body, received.headers)).toThrow();
    expect(() => new Webhook(hook.secret).verify(received.body.replace("webhook.test", "webhook.tesT"), received.headers)).toThrow();
  });
});

describe("retries", () => {
  it("follow the schedule (5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 8 h) with one webhook-id, then FAILED", async () => {
    const { calls } = receiver(() => 503);
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    const test = await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    expect(test.status).toBe(200);
    const delays: (number | undefined)[] = [];
    for (let i = 0; i < 11; i++) {
      const held = q.take();
      expect(held, `attempt ${i + 1}`).toHaveLength(1);
      if (i > 0) delays.push(held[0].delaySeconds);
      await q.deliver(held);
      const [d] = await p.deliveries(hook.id);
      expect(d.attempts).toBe(i + 1);
      expect(d.lastStatusCode).toBe(503);
      expect(d.lastError).toBe("HTTP 503: ok");
      if (i < 10) {
        expect(d.status).toBe("PENDING");
        expect(Date.parse(d.nextAttemptAt!)).toBeGreaterThan(Date.now());
      }
    }
    expect(delays).toEqual([5, 30, 120, 600, 1800, 3600, 7200, 14_400, 28_800, 28_800]);
    const [final] = await p.deliveries(hook.id);
    expect(final).toMatchObject({ status: "FAILED", attempts: 11, nextAttemptAt: null });
    expect(q.messages).toHaveLength(0);
    expect(calls).toHaveLength(11);
    expect(new Set(calls.map((c) => c.headers["webhook-id"])).size).toBe(1);
    // Each attempt is signed afresh and verifies.
    for (const c of calls) expect(() => new Webhook(hook.secret).verify(c.body, c.headers)).not.toThrow();
    expect((await p.deliveries(hook.id, "?status=FAILED")).map((d) => d.id)).toEqual([final.id]);
    expect(await p.deliveries(hook.id, "?status=PENDING")).toEqual([]);
  });

  it("a manual retry sends a FAILED delivery again now, with the same webhook-id; a 2xx makes it SUCCEEDED", async () => {
    let answer = 500;
    const { calls } = receiver(() => answer);
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    for (let i = 0; i < 11; i++) await q.deliver(q.take());
    const [failed] = await p.deliveries(hook.id);
    expect(failed.status).toBe("FAILED");
    answer = 204;
    const retry = await p.call("POST", `/webhooks/${hook.id}/deliveries/${failed.id}/retry`, undefined, q.env);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body).toMatchObject({ id: failed.id, status: "PENDING" });
    await q.deliver(q.take());
    const [after] = await p.deliveries(hook.id);
    expect(after, JSON.stringify(after)).toMatchObject({ status: "SUCCEEDED", attempts: 12, lastStatusCode: 204 });
    expect(new Set(calls.map((c) => c.headers["webhook-id"])).size).toBe(1);
  });

  it("a redirect is a failure and is not followed; a timeout or network error is a failure", async () => {
    let mode: "redirect" | "throw" = "redirect";
    const { calls } = receiver(() => {
      if (mode === "throw") throw new TypeError("connection refused");
      return new Response(null, { status: 302, headers: { location: "https://internal.example.net/" } });
    });
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    await q.deliver(q.take());
    let [d] = await p.deliveries(hook.id);
    expect(d).toMatchObject({ status: "PENDING", lastStatusCode: 302, lastError: "Redirects are not followed (HTTP 302)" });
    expect(calls.map((c) => c.url)).toEqual([URL_]);
    mode = "throw";
    await q.deliver(q.take());
    [d] = await p.deliveries(hook.id);
    expect(d).toMatchObject({ status: "PENDING", attempts: 2, lastStatusCode: null });
    expect(d.lastError).toContain("connection refused");
  });
});

describe("at least once, never twice", () => {
  it("a redelivered message sends no second request and records no second success", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    const [message] = q.take();
    await q.deliver([message]);
    await q.deliver([message]);
    await Promise.all([q.deliver([message]), q.deliver([message])]);
    expect(calls).toHaveLength(1);
    const list = await p.deliveries(hook.id);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ status: "SUCCEEDED", attempts: 1 });
    expect(q.messages).toHaveLength(0);
  });

  it("two copies of one attempt delivered at once send one request", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    const [message] = q.take();
    await Promise.all([q.deliver([message]), q.deliver([message]), q.deliver([message, message])]);
    expect(calls).toHaveLength(1);
  });

  it("a consumer that dies mid-batch has the batch retried, and the redelivered batch delivers every event", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hooks = [await p.createWebhook({ url: URL_ }), await p.createWebhook({ url: "https://other.example.net/x" })];
    const q = heldQueue();
    for (const hook of hooks) await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    const held = q.take();
    expect(held).toHaveLength(2);
    // D1 goes away after the claim's reads are prepared: the batch throws before anything is sent.
    const dying = d1Outage({ batch: 1 });
    const first = await q.deliver(held, { env: { ...q.env, DB: dying } as Env });
    expect(first.retryMessages).toHaveLength(2);
    expect(first.explicitAcks).toEqual([]);
    expect(calls).toHaveLength(0);
    const second = await q.deliver(held, { attempts: 2 });
    expect(second.explicitAcks).toHaveLength(2);
    expect(calls.map((c) => c.url).sort()).toEqual(["https://hooks.example.net/in", "https://other.example.net/x"]);
    for (const hook of hooks) expect((await p.deliveries(hook.id))[0]).toMatchObject({ status: "SUCCEEDED", attempts: 1 });
  });

  it("an attempt whose consumer died after claiming counts as a failed attempt (cron sweep), and the next one follows the schedule", async () => {
    const { calls } = receiver();
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const q = heldQueue();
    await p.call("POST", `/webhooks/${hook.id}/test`, undefined, q.env);
    const [message] = q.take();
    // The claim commits, then the outcome write fails (after the call: the receiver got it).
    const dying = d1Outage({ batch: 2 });
    await q.deliver([message], { env: { ...q.env, DB: dying } as Env });
    expect(calls).toHaveLength(1);
    // Redelivered at once: the claim still holds, nothing is sent twice.
    await q.deliver([message]);
    expect(calls).toHaveLength(1);
    const [pending] = await p.deliveries(hook.id);
    expect(pending).toMatchObject({ status: "PENDING", attempts: 1 });
    // A minute on, the claim (90 s) still holds; the tick after it counts the silent attempt as failed,
    // due again after the schedule's first delay, and queues attempt 2 with that delay.
    const { runScheduledJobs } = await import("../../../src/scheduled");
    await runScheduledJobs(q.env, { scheduledTime: Date.now() + 60_000 });
    expect((await p.deliveries(hook.id))[0]).toMatchObject({ status: "PENDING", attempts: 1, lastError: null });
    const later = Date.now() + 120_000;
    await runScheduledJobs(q.env, { scheduledTime: later });
    const [failedOnce] = await p.deliveries(hook.id);
    expect(failedOnce).toMatchObject({ status: "PENDING", attempts: 1, lastError: DEAD_ATTEMPT_ERROR, lastStatusCode: null });
    expect(Date.parse(failedOnce.nextAttemptAt!)).toBe(later + 5000);
    const next = q.take().filter((m) => m.body.kind === "delivery" && m.body.deliveryId === failedOnce.id);
    expect(next).toEqual([{ body: { kind: "delivery", deliveryId: failedOnce.id, projectId: p.id, attempt: 2 }, delaySeconds: 5 }]);
    // The next tick adds no second message; attempt 2 succeeds.
    await runScheduledJobs(q.env, { scheduledTime: later + 60_000 });
    expect(q.take().filter((m) => m.body.kind === "delivery" && m.body.deliveryId === failedOnce.id)).toEqual([]);
    await q.deliver(next);
    const mine = calls.filter((c) => c.headers["webhook-id"] === calls[0].headers["webhook-id"]);
    expect(mine).toHaveLength(2);
    expect((await p.deliveries(hook.id))[0]).toMatchObject({ status: "SUCCEEDED", attempts: 2 });
  });
});
