/**
 * The parts that protect mail when things go wrong, each with its own test:
 * dead letters, the scheduled sweep through the real `scheduled` handler,
 * the idempotency purge, jobs failing independently, the capture provider
 * and /dev/* in production, malformed queue messages, an unreachable SES,
 * a failing queue producer, the back-off cap, the sending-rate bucket, and
 * limits at their exact edges.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq, inArray, sql } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_SEND_BODY_BYTES } from "../../../src/app";
import { getDb } from "../../../src/db/client";
import { capturedMessages, emails, idempotencyKeys } from "../../../src/db/schema";
import type { ProjectLimiter } from "../../../src/entrypoints/project-limiter";
import type { Env, SendEmailMessage } from "../../../src/env";
import { MAX_ATTACHMENT_BYTES } from "../../../src/schemas/attachments";
import { backoffSeconds } from "../../../src/lib/queue-consumer";
import { CLAIM_LEASE_MS, OUTCOME_UNKNOWN_REASON } from "../../../src/services/send/reasons";
import { sweepStuckEmails } from "../../../src/services/send/sweep";
import { call, expectError } from "../../support/http";
import { sendingSetup } from "../../support/sending";
import { deadLetterQueue, SEND_QUEUE } from "../../../src/messages";
import { runConsumer } from "../../support/queues";
import type { Email, EmailList } from "../../support/api";

afterEach(() => vi.restoreAllMocks());

type Setup = Awaited<ReturnType<typeof sendingSetup>>;
const db = () => getDb(env.DB);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

async function sendTo(s: Setup, to: string[], extra: object = {}) {
  const res = await s.send({ to, from: s.from, subject: "Hello", body: "<p>Hi</p>", ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.emails.map((e: { email: string }) => e.email) as string[];
}

const recipients = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}@example.com`);
/**
 * What the sweep queued for this test's project. The sweep is global, so
 * stuck mail another test in this file left behind may be queued too.
 */
const ours = (s: Setup) =>
  s.queue
    .take()
    .map((m) => m.body)
    .filter((b) => b.projectId === s.project.id);
const emailOf = async (s: Setup, id: string) => (await s.get<Email>(`/emails/${id}`)).body;

describe("dead letters", () => {
  it("marks 100 exhausted emails FAILED, QUEUED and SENDING alike across the 90-id chunks (a started call as an unknown outcome), and never one that was SENT", async () => {
    const s = await sendingSetup();
    const ids = [...(await sendTo(s, recipients(50, "a"))), ...(await sendTo(s, recipients(50, "b")))];
    const messages = s.queue.take().map((m) => m.body);
    // One was delivered; ten (on both sides of the 90-id chunk boundary) are claimed by a consumer that then
    // died, five of them after their calls started.
    await s.deliver([messages[0]]);
    const claimed = ids.slice(85, 95);
    await db().update(emails).set({ status: "SENDING", sendingAt: null, attempts: 3 }).where(inArray(emails.id, claimed));
    await db()
      .update(emails)
      .set({ sendingAt: new Date() })
      .where(inArray(emails.id, ids.slice(90, 95)));

    const result = await runConsumer(
      deadLetterQueue(SEND_QUEUE),
      s.env,
      messages.map((body, i) => ({ id: `dead-${i}`, body })),
      { attempts: 9 },
    );
    expect(result.explicitAcks).toHaveLength(100);
    expect(result.retryMessages).toHaveLength(0);

    expect((await emailOf(s, ids[0])).status).toBe("SENT");
    const failed = await s.get<EmailList>("/emails?status=FAILED&limit=100");
    expect(failed.body.data.total).toBe(99);
    expect(new Set(failed.body.data.items.map((e: { id: string }) => e.id))).toEqual(new Set(ids.slice(1)));
    expect(await emailOf(s, ids[99])).toMatchObject({ status: "FAILED", error: "Gave up after 0 attempts" });
    expect(await emailOf(s, ids[87])).toMatchObject({ status: "FAILED", error: "Gave up after 3 attempts" });
    expect((await emailOf(s, ids[87])).failedAt).not.toBeNull();
    // A call that had started: an unknown outcome, as the sweep would settle it (reconcilable from SES's events).
    expect(await emailOf(s, ids[92])).toMatchObject({ status: "FAILED", error: OUTCOME_UNKNOWN_REASON });
  });
});

describe("the scheduled sweep, through the Worker's scheduled handler", () => {
  it("re-enqueues QUEUED mail whose message was lost, settles SENDING past the lease, leaves fresh claims alone, and the next tick finds nothing", async () => {
    const s = await sendingSetup();
    const [lost, died, working] = await sendTo(s, ["lost@example.com", "died@example.com", "working@example.com"]);
    const messages = s.queue.take();
    // `died` was claimed and its consumer stopped; `working` is being sent right now (claimed within the lease before the tick).
    const tickAt = new Date(Date.now() + CLAIM_LEASE_MS + MINUTE);
    await db().update(emails).set({ status: "SENDING", sendingAt: new Date(), attempts: 1 }).where(eq(emails.id, died));
    const recent = new Date(tickAt.getTime() - CLAIM_LEASE_MS / 2);
    await db().update(emails).set({ status: "SENDING", sendingAt: recent, updatedAt: recent, attempts: 1 }).where(eq(emails.id, working));

    await s.tick(tickAt);
    expect(ours(s)).toEqual([{ emailId: lost, projectId: s.project.id }]);
    expect(await emailOf(s, lost)).toMatchObject({ status: "QUEUED" });
    expect(await emailOf(s, died)).toMatchObject({ status: "FAILED", error: OUTCOME_UNKNOWN_REASON });
    expect(await emailOf(s, working)).toMatchObject({ status: "SENDING" });

    // The touch: a tick within the lease enqueues nothing again.
    await s.tick(new Date(tickAt.getTime() + CLAIM_LEASE_MS / 4));
    expect(ours(s)).toEqual([]);
    expect((await emailOf(s, working)).status).toBe("SENDING");

    // The re-enqueued message delivers; the late original of the settled one sends nothing.
    await s.deliver([{ emailId: lost, projectId: s.project.id }, messages[1].body]);
    expect(s.ses.calls.map((c) => c.to)).toEqual([["lost@example.com"]]);
    expect((await emailOf(s, lost)).status).toBe("SENT");
    expect((await emailOf(s, died)).status).toBe("FAILED");
  });

  it("is bounded: at most `limit` stuck emails per kind per run, the rest on the next run", async () => {
    const s = await sendingSetup();
    const ids = await sendTo(s, recipients(5, "stuck"));
    s.queue.take();
    // Only these five are old enough for a sweep at this time (everything else in this file is younger).
    const old = new Date(Date.now() - 10 * HOUR);
    await db().update(emails).set({ updatedAt: old }).where(inArray(emails.id, ids));
    const now = new Date(Date.now() - 10 * HOUR + CLAIM_LEASE_MS + MINUTE);
    expect(await sweepStuckEmails(s.env, now, { limit: 2 })).toBe(2);
    expect(await sweepStuckEmails(s.env, now, { limit: 2 })).toBe(2);
    expect(await sweepStuckEmails(s.env, now, { limit: 2 })).toBe(1);
    expect(await sweepStuckEmails(s.env, now, { limit: 2 })).toBe(0);
    expect(new Set(s.queue.take().map((m) => m.body.emailId))).toEqual(new Set(ids));
  });

  it("picks up mail accepted while the queue was down: /v1/send answers 200, the next tick enqueues it, it is delivered", async () => {
    const s = await sendingSetup();
    s.queue.failNext();
    const [id] = await sendTo(s, ["outage@example.com"]);
    expect(s.queue.messages).toHaveLength(0);
    expect((await emailOf(s, id)).status).toBe("QUEUED");

    await s.tick(new Date(Date.now() + CLAIM_LEASE_MS + MINUTE));
    const requeued = ours(s);
    expect(requeued.map((m) => m.emailId)).toEqual([id]);
    await s.deliver(requeued);
    expect((await emailOf(s, id)).status).toBe("SENT");
  });
});

describe("Idempotency-Key records over time", () => {
  it("a record 23 hours old still replays; the purge in the scheduled handler removes it after 24 hours, and not before", async () => {
    const s = await sendingSetup();
    const body = { to: "ada@example.com", from: s.from, subject: "s", body: "b" };
    const first = await s.send(body, { "Idempotency-Key": "nightly" });
    expect(first.status).toBe(200);
    const createdAt = new Date(Date.now() - 23 * HOUR);
    await db().update(idempotencyKeys).set({ createdAt }).where(eq(idempotencyKeys.key, "nightly"));

    const replay = await s.send(body, { "Idempotency-Key": "nightly" });
    expect(replay.body).toEqual(first.body);
    expect(s.queue.messages).toHaveLength(1);

    // 23 h 59 min after it was made, the purge keeps it: the key still names the first request.
    await s.tick(new Date(createdAt.getTime() + 24 * HOUR - MINUTE));
    expectError(await s.send({ ...body, subject: "other" }, { "Idempotency-Key": "nightly" }), 409, "CONFLICT");

    // One minute past 24 hours it is gone, so the key is free for a new request.
    await s.tick(new Date(createdAt.getTime() + 24 * HOUR + MINUTE));
    expect(await db().select().from(idempotencyKeys).where(eq(idempotencyKeys.key, "nightly"))).toEqual([]);
    const fresh = await s.send({ ...body, subject: "other" }, { "Idempotency-Key": "nightly" });
    expect(fresh.status).toBe(200);
    expect(fresh.body.data.emails[0].email).not.toBe(first.body.data.emails[0].email);
  });

  it("one scheduled job failing does not stop the others: the sweep's queue outage leaves the purge running", async () => {
    const s = await sendingSetup();
    const [lost] = await sendTo(s, ["lost-again@example.com"], {});
    s.queue.take();
    await s.send({ to: "x@example.com", from: s.from, subject: "s", body: "b" }, { "Idempotency-Key": "purge-me" });
    s.queue.take();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    s.queue.failNext(10);

    // A day later: the sweep throws on the queue, the purge after it still runs, and the handler itself does not throw.
    await s.tick(new Date(Date.now() + 25 * HOUR));
    expect(errors.mock.calls.some((c) => String(c[0]).includes("stuckEmails"))).toBe(true);
    expect(await db().select().from(idempotencyKeys).where(eq(idempotencyKeys.key, "purge-me"))).toEqual([]);
    expect((await emailOf(s, lost)).status).toBe("QUEUED");
  });
});

describe("the capture provider and /dev/* are refused outside development", () => {
  it.each([["production"], [undefined], ["staging"]])(
    "ENVIRONMENT=%s with EMAIL_PROVIDER=capture is a configuration error: every request is a 500 naming it; queued mail is retried, never captured",
    async (environment) => {
      const s = await sendingSetup();
      const [id] = await sendTo(s, ["ada@example.com"]);
      const misconfigured = { ...s.env, EMAIL_PROVIDER: "capture", ENVIRONMENT: environment } as Env;
      delete (misconfigured as unknown as Record<string, unknown>).TEST_MIGRATIONS;
      const before = (await db().select({ n: sql<number>`count(*)` }).from(capturedMessages))[0].n;
      const errors = vi.spyOn(console, "error").mockImplementation(() => {});
      const refused = await call("POST", "/v1/send", {
        key: s.project.secretKey,
        body: { to: "bob@example.com", from: s.from, subject: "Hi", body: "<p>Hi</p>" },
        env: misconfigured,
      });
      const error = expectError(refused, 500, "INTERNAL_ERROR");
      expect(error.message).toContain("EMAIL_PROVIDER=capture");
      const result = await runConsumer(SEND_QUEUE, misconfigured, s.queue.take(), { mayThrow: true });
      errors.mockRestore();
      expect(result.explicitAcks).toHaveLength(0);
      expect((await emailOf(s, id)).status).toBe("QUEUED");
      expect((await db().select({ n: sql<number>`count(*)` }).from(capturedMessages))[0].n).toBe(before);
      expect(s.ses.requests).toHaveLength(0);
    },
  );

  it.each([["production"], ["test"], [undefined]])(
    "ENVIRONMENT=%s: /dev/outbox, its files and the bench's /dev routes are 404 in the error envelope",
    async (environment) => {
      for (const path of ["/dev/outbox", "/dev/outbox/anything.eml", "/dev/outbox/anything", "/dev/d1-stats", "/dev/d1-round-trip"]) {
        const response = await call<{ success: boolean; error: { code: string; requestId: string } }>("GET", path, {
          env: { ...env, ENVIRONMENT: environment, EMAIL_PROVIDER: "ses" },
        });
        expect(response.status, path).toBe(404);
        const body = response.body;
        expect(body).toMatchObject({ success: false, error: { code: "NOT_FOUND" } });
        expect(response.headers.get("X-Request-Id")).toBe(body.error.requestId);
      }
      const posted = await call("POST", "/dev/d1-round-trip", {
        body: { email: "a@example.com" },
        env: { ...env, ENVIRONMENT: environment, EMAIL_PROVIDER: "ses" },
      });
      expect(posted.status).toBe(404);
      expect(posted.body).toMatchObject({ success: false, error: { code: "NOT_FOUND" } });
      // The positive control: in development the page exists.
      const dev = await call("GET", "/dev/outbox", { env: { ...env, ENVIRONMENT: "development" } });
      expect(dev.status).toBe(200);
      const roundTrip = await call("GET", "/dev/d1-round-trip", { env: { ...env, ENVIRONMENT: "development" } });
      expect(roundTrip.status).toBe(200);
      const postedInDevelopment = await call("POST", "/dev/d1-round-trip", { body: { email: "a@example.com" }, env: { ...env, ENVIRONMENT: "development" } });
      expect(postedInDevelopment.status).toBe(200);
    },
  );
});

describe("the send consumer when its input or its provider misbehaves", () => {
  it("acks malformed messages and ids it does not know without sending, and still delivers the good one in the batch", async () => {
    const s = await sendingSetup();
    const [id] = await sendTo(s, ["good@example.com"]);
    const [good] = s.queue.take();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const bad = [
      null,
      "text",
      42,
      [],
      {},
      { emailId: 7, projectId: s.project.id },
      { emailId: id },
      { projectId: s.project.id },
    ] as unknown as SendEmailMessage[];
    const unknown = { emailId: "01900000-0000-7000-8000-000000000000", projectId: s.project.id };
    const otherProject = { emailId: id, projectId: "01900000-0000-7000-8000-000000000001" };
    // A message naming this email under a project that does not exist changes nothing.
    expect((await s.deliver([otherProject])).explicitAcks).toHaveLength(1);
    expect(await emailOf(s, id)).toMatchObject({ status: "QUEUED", error: null });
    const result = await s.deliver([...bad, unknown, otherProject, good.body]);
    errors.mockRestore();
    expect(result.retryMessages).toEqual([]);
    expect(result.explicitAcks).toHaveLength(bad.length + 3);
    expect(s.ses.calls.map((c) => c.to)).toEqual([["good@example.com"]]);
    expect((await emailOf(s, id)).status).toBe("SENT");
  });

  it("a lost connection to SES is an unknown outcome (SES may have the message): FAILED with the reason, never called again", async () => {
    const s = await sendingSetup();
    const [id] = await sendTo(s, ["ada@example.com"]);
    const [message] = s.queue.take();
    s.ses.failNext({ network: true });
    const first = await s.deliver([message.body], 1);
    expect(first.retryMessages).toHaveLength(0);
    expect(await emailOf(s, id)).toMatchObject({ status: "FAILED", error: expect.stringMatching(/^Outcome unknown: SES gave no answer/) });

    const second = await s.deliver([message.body], 2);
    expect(second.explicitAcks).toHaveLength(1);
    expect(s.ses.requests.map((r) => r.status)).toEqual([0]);
  });

  it("caps the back-off: a message on its 30th attempt waits 15 minutes (plus jitter), never longer", async () => {
    const s = await sendingSetup();
    await sendTo(s, ["ada@example.com"]);
    const [message] = s.queue.take();
    s.ses.failNext({ status: 503, message: "unavailable" });
    const late = await s.deliver([message.body], 30);
    expect(late.retryDelays[0]).toBeGreaterThanOrEqual(900);
    expect(late.retryDelays[0]).toBeLessThanOrEqual(1350);
    for (const attempt of [1, 2, 5, 8, 9, 12, 50, 1000]) {
      const base = Math.min(900, 5 * 2 ** (attempt - 1));
      for (let i = 0; i < 20; i++) {
        const delay = backoffSeconds(attempt);
        expect(delay, `attempt ${attempt}`).toBeGreaterThanOrEqual(base);
        expect(delay, `attempt ${attempt}`).toBeLessThanOrEqual(Math.round(base * 1.5));
      }
    }
  });

  it("when putting rate-limited mail back on the queue fails, the messages are retried with the delay and nothing is lost", async () => {
    const s = await sendingSetup({ SEND_RATE_PER_SECOND: "1" });
    const ids = await sendTo(s, ["a@example.com", "b@example.com", "c@example.com"]);
    const messages = s.queue.take().map((m) => m.body);
    s.queue.failNext();
    const result = await s.deliver(messages);
    expect(s.ses.calls).toHaveLength(1);
    expect(result.retryMessages).toHaveLength(2);
    expect(result.retryDelays.every((d: number | undefined) => (d ?? 0) >= 1)).toBe(true);
    expect(s.queue.messages).toHaveLength(0);
    const statuses = await Promise.all(ids.map(async (id) => (await emailOf(s, id)).status));
    expect(statuses.sort()).toEqual(["QUEUED", "QUEUED", "SENT"]);
    // The claims were given back, so the retried messages can claim them again.
    const queued = (await s.get<EmailList>("/emails?status=QUEUED")).body.data.items;
    expect(queued.map((e: { attempts: number }) => e.attempts)).toEqual([0, 0]);
  });
});

describe("the sending-rate bucket, with an injected clock", () => {
  it("starts full, refills at the rate, holds at most one second's worth, and says when the rest can go", async () => {
    const stub = env.PROJECT_LIMITER.get(env.PROJECT_LIMITER.idFromName("send:bucket-clock"));
    await runInDurableObject(stub, (limiter: ProjectLimiter) => {
      const t = 1_800_000_000_000;
      expect(limiter.takeSendTokens(10, 10, t)).toEqual({ granted: 10, retryAfterMs: 0 });
      expect(limiter.takeSendTokens(1, 10, t)).toEqual({ granted: 0, retryAfterMs: 100 });
      // 250 ms later: 2.5 tokens, so 2 go and the other 3 can go once 2.5 more have come in.
      expect(limiter.takeSendTokens(5, 10, t + 250)).toEqual({ granted: 2, retryAfterMs: 250 });
      expect(limiter.takeSendTokens(1, 10, t + 300)).toEqual({ granted: 1, retryAfterMs: 0 });
      // A long pause never saves up more than one second's worth.
      expect(limiter.takeSendTokens(25, 10, t + 60_000)).toEqual({ granted: 10, retryAfterMs: 1_500 });
    });
  });
});

describe("limits at their exact edges", () => {
  /** A /v1/send body of exactly `bytes` bytes (unknown keys are ignored, so padding makes the size). */
  function bodyOfSize(s: Setup, bytes: number) {
    const base = { to: "edge@example.com", from: s.from, subject: "s", body: "b", padding: "" };
    return { ...base, padding: "x".repeat(bytes - JSON.stringify(base).length) };
  }

  it(`/v1/send reads a body of exactly ${MAX_SEND_BODY_BYTES} bytes (then its shape limit applies) and refuses one byte more unread, storing nothing`, async () => {
    const s = await sendingSetup();
    const exact = bodyOfSize(s, MAX_SEND_BODY_BYTES);
    expect(JSON.stringify(exact).length).toBe(MAX_SEND_BODY_BYTES);
    // Within the size limit, but 15 MB outside attachments' content: the shape limit (1 MiB) refuses it.
    const shape = expectError(await s.send(exact), 413, "PAYLOAD_TOO_LARGE");
    expect(shape.message).toContain("without its attachments' content");
    const size = expectError(await s.send(bodyOfSize(s, MAX_SEND_BODY_BYTES + 1)), 413, "PAYLOAD_TOO_LARGE");
    expect(size.message).toBe("Request body is too large");
    expect((await s.get<EmailList>("/emails")).body.data.total).toBe(0);
  }, 60_000);

  it(`an attachment of exactly ${MAX_ATTACHMENT_BYTES} bytes is accepted and delivered intact; one byte more is a 422`, async () => {
    const s = await sendingSetup();
    const attachment = (bytes: number) => {
      const data = new Uint8Array(bytes);
      for (let i = 0; i < bytes; i++) data[i] = (i * 7 + 3) & 0xff;
      let binary = "";
      for (let i = 0; i < bytes; i += 0x8000) binary += String.fromCharCode(...data.subarray(i, i + 0x8000));
      return { filename: "edge.bin", content: btoa(binary), contentType: "application/octet-stream" };
    };
    const base = { to: "edge@example.com", from: s.from, subject: "big", body: "<p>file</p>" };
    const tooBig = expectError(await s.send({ ...base, attachments: [attachment(MAX_ATTACHMENT_BYTES + 1)] }), 422);
    expect(tooBig.errors!.map((e) => e.field)).toContain("attachments");
    const exact = attachment(MAX_ATTACHMENT_BYTES);
    const [id] = await sendTo(s, [base.to], { subject: base.subject, body: base.body, attachments: [exact] });
    const result = await s.deliver();
    expect(result.explicitAcks).toHaveLength(1);
    expect(await emailOf(s, id)).toMatchObject({ status: "SENT", error: null });
    const part = s.ses.calls[0].mime.parts.find((p) => /attachment/.test(p.headers["content-disposition"] ?? ""))!;
    expect(part.base64.length).toBe(exact.content.length);
    expect(part.base64 === exact.content).toBe(true);
  }, 120_000);
});
