import { env } from "cloudflare:workers";
import { eq, inArray } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { emails } from "../../../src/db/schema";
import { countingD1, d1Stats } from "../../../src/lib/d1-counter";
import { PROVIDER_CONCURRENCY } from "../../../src/services/send/deliver";
import type { Env } from "../../../src/env";
import { sendingSetup } from "../../support/sending";

type Setup = Awaited<ReturnType<typeof sendingSetup>>;
const db = () => getDb(env.DB);

async function sendTo(s: Setup, to: string[]) {
  const ids: string[] = [];
  for (let i = 0; i < to.length; i += 50) {
    const res = await s.send({ to: to.slice(i, i + 50), from: s.from, subject: "Hello", body: "<p>Hi {{email}}</p>" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    ids.push(...res.body.data.emails.map((e: { email: string }) => e.email));
  }
  return ids;
}

const addresses = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}@example.com`);

/** D1 statements the consumer runs for one batch of these messages (the fake SES writes nothing to D1). */
async function statementsFor(s: Setup, messages = s.queue.take().map((m) => m.body)) {
  const before = d1Stats.statements;
  const result = await s.deliver(messages);
  return { statements: d1Stats.statements - before, result };
}

describe("the send consumer works per batch, not per email", () => {
  it("a batch of small mail costs one claim (which returns the bodies; with the settled mail's webhook events) and one write of every outcome, plus their webhook events when the project has an endpoint", async () => {
    const one = await sendingSetup({ DB: countingD1(env.DB) });
    await sendTo(one, ["solo@example.com"]);
    const single = await statementsFor(one);
    expect(single.result.explicitAcks).toHaveLength(1);
    expect(one.ses.calls).toHaveLength(1);

    const many = await sendingSetup({ DB: countingD1(env.DB), SEND_RATE_PER_SECOND: "1000" });
    const ids = await sendTo(many, addresses(100, "many"));
    const hundred = await statementsFor(many);
    expect(hundred.result.explicitAcks).toHaveLength(100);
    expect(many.ses.calls).toHaveLength(100);
    const rows = await db().select({ status: emails.status }).from(emails).where(inArray(emails.id, ids));
    expect(rows.every((r) => r.status === "SENT")).toBe(true);

    // The claim (small bodies included) and the events of mail it settles, one batch; one mark of the calls
    // started per wave of PROVIDER_CONCURRENCY calls (docs/reliability.md); the outcomes' UPDATE with the
    // HTML's bytes taken off before it and the reputation's sent count after it (no webhook endpoint, so no
    // events to look for) and the sent bodies' r2_usage bytes (one R2 object), one batch. Each setup's first
    // batch also reads its sending domain's tracking settings from the control database once (kept per
    // isolate for DOMAIN_TRACKING_TTL_MS, so a busy domain pays it once per 5 s, not per batch).
    const waves = Math.ceil(100 / PROVIDER_CONCURRENCY);
    const domainRead = 1;
    expect(single.statements).toBe(2 + 1 + 4 + domainRead);
    expect(hundred.statements).toBe(2 + waves + 4 + domainRead);

    // With an enabled endpoint the outcomes' batch also records their webhook events (INSERT ... SELECT).
    // (development: the endpoint's host needs no public DNS here; it is never called in this test)
    const hooked = await sendingSetup({ DB: countingD1(env.DB), SEND_RATE_PER_SECOND: "1000", ENVIRONMENT: "development" });
    const hook = await hooked.request("POST", "/webhooks", { url: "http://127.0.0.1:9/in", events: ["email.sent"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    await sendTo(hooked, addresses(100, "hooked"));
    const withEvents = await statementsFor(hooked);
    expect(withEvents.result.explicitAcks).toHaveLength(100);
    expect(withEvents.statements).toBe(2 + waves + 5 + domainRead);
    const events = await env.DB.prepare("SELECT count(*) AS n FROM webhook_events WHERE project_id = ? AND type = 'email.sent'")
      .bind(hooked.project.id)
      .first<{ n: number }>();
    expect(events?.n).toBe(100);
  });

  it("mixed outcomes in one batch (sent, rejected, retryable) are still one write, each email recorded with its own", async () => {
    const s = await sendingSetup({ DB: countingD1(env.DB) });
    const ids = await sendTo(s, ["one@example.com", "two@example.com", "three@example.com"]);
    const messages = s.queue.take().map((m) => m.body);
    // The first two provider calls to arrive fail, one for good and one for now.
    s.ses.failNext(
      { status: 400, errorType: "MessageRejected", message: "Address blacklisted." },
      { status: 500, errorType: "InternalFailure", message: "boom" },
    );
    const { statements, result } = await statementsFor(s, messages);
    // The claim (with the three small bodies) and its settled mail's events, one batch; the mark of the wave's
    // three calls; the outcomes (with the bytes and sent count beside them) and the sent body's r2_usage bytes, one batch;
    // the sending domain's tracking settings, read once (cold isolate cache).
    expect(statements).toBe(8);
    expect(result.explicitAcks).toHaveLength(2);
    expect(result.retryMessages).toHaveLength(1);
    expect(s.ses.calls).toHaveLength(1);
    const rows = await db().select().from(emails).where(inArray(emails.id, ids));
    const byStatus = new Map(rows.map((e) => [e.status, e]));
    expect([...byStatus.keys()].sort()).toEqual(["FAILED", "QUEUED", "SENT"]);
    expect(byStatus.get("SENT")).toMatchObject({ error: null, providerMessageId: s.ses.calls[0].messageId });
    expect(byStatus.get("SENT")!.sentAt).not.toBeNull();
    expect(byStatus.get("FAILED")!.error).toContain("Address blacklisted.");
    expect(byStatus.get("FAILED")!.failedAt).not.toBeNull();
    expect(byStatus.get("QUEUED")!.error).toContain("500");
    // The retried message is the one whose email went back to QUEUED.
    const retried = messages[Number(/^m(\d+)-/.exec(result.retryMessages[0].msgId)![1])];
    expect(retried.emailId).toBe(byStatus.get("QUEUED")!.id);
  });
});

describe("the sending-rate bucket", () => {
  it("when its Durable Object cannot be reached, nothing goes out unmetered: the claims are given back and the mail re-queued with a delay", async () => {
    const unreachable = {
      idFromName: (name: string) => env.PROJECT_LIMITER.idFromName(name),
      // The API's rate limit still works; only the sending-rate call fails.
      get: (id: DurableObjectId) => {
        const real = env.PROJECT_LIMITER.get(id);
        return {
          leaseApi: (limit: number, now?: number, want?: number) => real.leaseApi(limit, now, want),
          takeSendTokens: () => Promise.reject(new Error("Durable Object reset (test)")),
        };
      },
    } as unknown as Env["PROJECT_LIMITER"];
    const s = await sendingSetup({ PROJECT_LIMITER: unreachable });
    const ids = await sendTo(s, ["a@example.com", "b@example.com"]);
    const result = await s.deliver();
    expect(s.ses.requests).toHaveLength(0);
    expect(result.explicitAcks).toHaveLength(2);
    const requeued = s.queue.take();
    expect(requeued.map((m) => m.body.emailId).sort()).toEqual([...ids].sort());
    expect(requeued.every((m) => (m.delaySeconds ?? 0) >= 5)).toBe(true);
    const rows = await db().select().from(emails).where(inArray(emails.id, ids));
    expect(rows.map((r) => [r.status, r.attempts])).toEqual([
      ["QUEUED", 0],
      ["QUEUED", 0],
    ]);
  });
});

describe("provider calls of a batch", () => {
  it("go out in parallel, never more than PROVIDER_CONCURRENCY at once", async () => {
    const s = await sendingSetup({ SEND_RATE_PER_SECOND: "1000" });
    await sendTo(s, addresses(20, "par"));
    // Hold every SendEmail call until PROVIDER_CONCURRENCY of them are waiting at once: a consumer
    // that sent one at a time would never get there (the guard fails the call instead of hanging).
    let inFlight = 0;
    let most = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const handle = s.ses.handle;
    s.ses.handle = async (request: Request) => {
      most = Math.max(most, ++inFlight);
      if (inFlight >= PROVIDER_CONCURRENCY) open();
      const guard = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("calls were not made in parallel")), 10_000));
      try {
        await Promise.race([gate, guard]);
        return await handle(request);
      } finally {
        inFlight--;
      }
    };
    const result = await s.deliver();
    expect(result.explicitAcks).toHaveLength(20);
    expect(s.ses.calls).toHaveLength(20);
    expect(most).toBe(PROVIDER_CONCURRENCY);
  });
});

describe("the batch claim under redelivery", () => {
  it("messages whose email is already SENT, being sent, or FAILED, and a duplicate in the same batch, are acked without another provider call", async () => {
    const s = await sendingSetup();
    const [done, inFlight, failed, fresh] = await sendTo(s, ["done@example.com", "inflight@example.com", "failed@example.com", "fresh@example.com"]);
    const messages = s.queue.take().map((m) => m.body);
    await s.deliver([messages[0]]);
    expect(s.ses.calls).toHaveLength(1);
    // Another invocation holds a claim on one; another email already failed for good.
    await db().update(emails).set({ status: "SENDING", sendingAt: new Date() }).where(eq(emails.id, inFlight));
    await db().update(emails).set({ status: "FAILED", failedAt: new Date(), error: "rejected" }).where(eq(emails.id, failed));

    const redelivered = await s.deliver([...messages, messages[3], messages[0]]);
    expect(redelivered.explicitAcks).toHaveLength(6);
    expect(redelivered.retryMessages).toHaveLength(0);
    // Only the fresh email reached the provider, once.
    expect(s.ses.calls.map((c) => c.to[0])).toEqual(["done@example.com", "fresh@example.com"]);
    const rows = new Map(
      (
        await db()
          .select()
          .from(emails)
          .where(inArray(emails.id, [done, inFlight, failed, fresh]))
      ).map((e) => [e.id, e]),
    );
    expect(rows.get(done)!.status).toBe("SENT");
    expect(rows.get(inFlight)!.status).toBe("SENDING");
    expect(rows.get(failed)).toMatchObject({ status: "FAILED", error: "rejected" });
    expect(rows.get(fresh)).toMatchObject({ status: "SENT", attempts: 1 });

    // The whole batch again: nothing more is sent.
    const again = await s.deliver(messages);
    expect(again.explicitAcks).toHaveLength(4);
    expect(s.ses.calls).toHaveLength(2);
  });

  it("a message naming another project's email claims nothing and changes nothing", async () => {
    const a = await sendingSetup();
    const b = await sendingSetup();
    const [theirs] = await sendTo(b, ["victim@example.com"]);
    b.queue.take();
    const result = await a.deliver([{ emailId: theirs, projectId: a.project.id }]);
    expect(result.explicitAcks).toHaveLength(1);
    expect(a.ses.calls).toHaveLength(0);
    const [row] = await db().select().from(emails).where(eq(emails.id, theirs));
    expect(row).toMatchObject({ status: "QUEUED", attempts: 0 });
  });
});
