import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { eq } from "drizzle-orm";
import { getDb } from "../../../src/db/client";
import { emails, projects } from "../../../src/db/schema";
import { sweepStuckEmails } from "../../../src/services/send/sweep";
import { QUEUED_LEASE_MS } from "../../../src/services/send/reasons";
import { decodeWords } from "../../fakes/ses";
import { sendingSetup } from "../../support/sending";
import { deadLetterQueue, SEND_QUEUE } from "../../../src/messages";
import { runConsumer } from "../../support/queues";
import type { Email, EmailList, SendResponse } from "../../support/api";

afterEach(() => vi.restoreAllMocks());

type Setup = Awaited<ReturnType<typeof sendingSetup>>;

async function sendOne(s: Setup, over: object = {}) {
  const res = await s.send({
    to: "ada@example.com",
    from: s.from,
    subject: "Hello",
    body: '<p>Hi <a href="https://example.com/x?a=1&amp;b=2">link</a></p>',
    ...over,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.emails[0].email as string;
}

const status = async (s: Setup, id: string) => (await s.get<Email>(`/emails/${id}`)).body;

describe("send queue consumer", () => {
  it("sends through SES v2 with a SigV4-signed raw MIME message: both parts, Message-ID on the sender's domain, tracked links", async () => {
    const s = await sendingSetup({ SES_CONFIGURATION_SET: "feedback" });
    const id = await sendOne(s, { to: { name: "Ada Lovelace", email: "ada@example.com" } });
    const result = await s.deliver();
    expect(result.explicitAcks).toHaveLength(1);
    expect(s.ses.calls).toHaveLength(1);
    const call = s.ses.calls[0];
    expect(call.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDTESTFAKE\/\d{8}\/eu-west-1\/ses\/aws4_request/);
    expect(call.to).toEqual(["ada@example.com"]);
    expect(call.from).toBe(s.from);
    expect(call.configurationSet).toBe("feedback");
    const { headers, parts } = call.mime;
    expect(decodeWords(headers.to)).toBe("Ada Lovelace <ada@example.com>");
    expect(headers["message-id"]).toBe(`<${id}@${s.domain}>`);
    expect(headers["content-type"]).toMatch(/^multipart\/alternative/);
    expect(headers["list-unsubscribe"]).toBeUndefined(); // transactional mail
    expect(parts.map((p) => p.contentType.split(";")[0])).toEqual(["text/plain", "text/html"]);
    expect(parts[0].text).toContain("Hi link");
    const html = parts[1].text;
    expect(html).toMatch(new RegExp(`href="http://edge-mail\\.test/t/c/${id}\\?u=https%3A%2F%2Fexample\\.com%2Fx%3Fa%3D1%26b%3D2&(amp;)?s=[^"]+"`));
    expect(html).toMatch(new RegExp(`<img src="http://edge-mail\\.test/t/o/${id}\\?s=[^"]+"`));

    const email = await status(s, id);
    expect(email).toMatchObject({ status: "SENT", providerMessageId: s.ses.calls[0].messageId, attempts: 1, error: null });
    expect(email.sentAt).not.toBeNull();
  });

  it("leaves links alone when the project turned tracking off", async () => {
    const s = await sendingSetup();
    await getDb(env.DB).update(projects).set({ trackingEnabled: false }).where(eq(projects.id, s.project.id));
    await sendOne(s);
    await s.deliver();
    const html = s.ses.calls[0].mime.parts[1].text;
    expect(html).toContain('href="https://example.com/x?a=1&amp;b=2"');
    expect(html).not.toContain("/t/o/");
  });

  it("sends exactly once when the same message is delivered again, or twice at the same time", async () => {
    const s = await sendingSetup();
    const id = await sendOne(s);
    const [message] = s.queue.take();
    await s.deliver([message.body]);
    const again = await s.deliver([message.body]);
    expect(again.explicitAcks).toHaveLength(1);
    expect(again.retryMessages).toHaveLength(0);

    const id2 = await sendOne(s, { to: "bob@example.com" });
    const [second] = s.queue.take();
    await Promise.all([s.deliver([second.body]), s.deliver([second.body]), s.deliver([second.body])]);
    expect(s.ses.requests).toHaveLength(2);
    expect((await status(s, id)).status).toBe("SENT");
    expect((await status(s, id2)).status).toBe("SENT");
  });

  it("retries a provider 500 with back-off, then records SENT after the 200: one accepted call", async () => {
    const s = await sendingSetup();
    const id = await sendOne(s);
    const [message] = s.queue.take();
    s.ses.failNext({ status: 500, errorType: "InternalFailure", message: "boom" });
    const first = await s.deliver([message.body], 1);
    expect(first.retryMessages).toHaveLength(1);
    expect(first.retryDelays[0]).toBeGreaterThanOrEqual(5);
    expect(await status(s, id)).toMatchObject({ status: "QUEUED", error: expect.stringContaining("SES 500") });

    const second = await s.deliver([message.body], 2);
    expect(second.explicitAcks).toHaveLength(1);
    expect(s.ses.requests.map((r) => r.status)).toEqual([500, 200]);
    expect(s.ses.calls).toHaveLength(1);
    expect(await status(s, id)).toMatchObject({ status: "SENT", attempts: 2, error: null });
  });

  it("retries throttling (429 TooManyRequestsException) with growing delays", async () => {
    const s = await sendingSetup();
    const id = await sendOne(s);
    const [message] = s.queue.take();
    s.ses.failNext({ status: 429, errorType: "TooManyRequestsException" }, { status: 429, errorType: "TooManyRequestsException" });
    const first = await s.deliver([message.body], 1);
    const second = await s.deliver([message.body], 4);
    expect(second.retryDelays[0]).toBeGreaterThan(first.retryDelays[0]!);
    await s.deliver([message.body], 5);
    expect(s.ses.calls).toHaveLength(1);
    expect((await status(s, id)).status).toBe("SENT");
  });

  it("marks the email FAILED with the provider's reason on a 400 rejection, without retrying", async () => {
    const s = await sendingSetup();
    const id = await sendOne(s);
    s.ses.failNext({ status: 400, errorType: "MessageRejected", message: "Email address is not verified." });
    const result = await s.deliver();
    expect(result.retryMessages).toHaveLength(0);
    expect(result.explicitAcks).toHaveLength(1);
    const email = await status(s, id);
    expect(email).toMatchObject({ status: "FAILED", error: expect.stringContaining("MessageRejected: Email address is not verified.") });
    expect(email.failedAt).not.toBeNull();
    await s.deliver([{ emailId: id, projectId: s.project.id }]);
    expect(s.ses.requests).toHaveLength(1);
  });

  it("keeps mail and names the missing setting when SES credentials are not configured", async () => {
    const s = await sendingSetup({ SES_ACCESS_KEY_ID: undefined, SES_SECRET_ACCESS_KEY: undefined });
    const id = await sendOne(s);
    const result = await s.deliver();
    expect(result.retryMessages).toHaveLength(1);
    expect(s.ses.requests).toHaveLength(0);
    expect(await status(s, id)).toMatchObject({ status: "QUEUED", error: expect.stringContaining("SES_ACCESS_KEY_ID") });
  });

  it("marks emails FAILED from the dead-letter queue, but never one that was sent", async () => {
    const s = await sendingSetup();
    const failing = await sendOne(s);
    const sent = await sendOne(s, { to: "bob@example.com" });
    const [failMsg, sentMsg] = s.queue.take();
    s.ses.failNext({ status: 503, message: "unavailable" });
    await s.deliver([failMsg.body], 8);
    await s.deliver([sentMsg.body], 1);

    const dead = await runConsumer(deadLetterQueue(SEND_QUEUE), s.env, [
      { id: "d1", body: failMsg.body },
      { id: "d2", body: sentMsg.body },
    ]);
    expect(dead.explicitAcks.sort()).toEqual(["d1", "d2"]);
    expect(await status(s, failing)).toMatchObject({ status: "FAILED", error: expect.stringMatching(/^Gave up after 1 attempts: SES 503/) });
    expect((await status(s, sent)).status).toBe("SENT");
  });

  it("holds a project to its sending rate: the rest of a batch is put back with a delay, not dropped or retried", async () => {
    const s = await sendingSetup({ SEND_RATE_PER_SECOND: "2" });
    const res = await s.send({
      to: ["a@example.com", "b@example.com", "c@example.com", "d@example.com", "e@example.com"],
      from: s.from,
      subject: "s",
      body: "b",
    });
    expect(res.status).toBe(200);
    const result = await s.deliver();
    expect(s.ses.calls).toHaveLength(2);
    expect(result.retryMessages).toHaveLength(0);
    expect(result.explicitAcks).toHaveLength(5);
    const deferred = s.queue.take();
    expect(deferred).toHaveLength(3);
    expect(deferred.every((m) => (m.delaySeconds ?? 0) >= 1)).toBe(true);
    const queued = await s.get<EmailList>("/emails?status=QUEUED");
    expect(queued.body.data.total).toBe(3);

    // Another project has its own bucket.
    const other = await sendingSetup({ SEND_RATE_PER_SECOND: "2" });
    await other.send({ to: ["a@example.com", "b@example.com"], from: other.from, subject: "s", body: "b" });
    await other.deliver();
    expect(other.ses.calls).toHaveLength(2);
  });

  it("re-enqueues emails whose enqueue was lost (the scheduled sweep)", async () => {
    const s = await sendingSetup();
    const id = await sendOne(s);
    s.queue.take(); // the message is lost
    const db = getDb(env.DB);
    await db
      .update(emails)
      .set({ updatedAt: new Date(Date.now() - 60 * 60 * 1000) })
      .where(eq(emails.id, id));
    const now = new Date();
    expect(await sweepStuckEmails(s.env, now)).toBe(1);
    const requeued = s.queue.take();
    expect(requeued.map((m) => m.body)).toEqual([{ emailId: id, projectId: s.project.id }]);
    // The sweep touched it: the next tick does not enqueue it again before another lease has passed.
    expect(await sweepStuckEmails(s.env, new Date(now.getTime() + QUEUED_LEASE_MS / 2))).toBe(0);
    expect(s.queue.take()).toEqual([]);
    await s.deliver(requeued.map((m) => m.body));
    expect((await status(s, id)).status).toBe("SENT");
  });
});

describe("end to end through the real queue", () => {
  it("a send reaches SENT through the local queue with the capture provider, and shows in /dev/outbox", async () => {
    const s = await sendingSetup();
    const { call } = await import("../../support/http");
    const res = await call<SendResponse>("POST", "/v1/send", {
      key: s.project.secretKey,
      body: { to: "ada@example.com", from: s.from, subject: "Queued for real", body: "<p>real queue</p>" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.body.data.emails[0].email;
    let email: any;
    // The local queue delivers on its own schedule (max_batch_timeout = 1 s): wait for the outcome, not for a time.
    for (let i = 0; i < 250 && email?.status !== "SENT"; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      email = (await call("GET", `/emails/${id}`, { key: s.project.secretKey })).body;
    }
    expect(email.status).toBe("SENT");
    expect(email.providerMessageId).toMatch(/^capture-/);
    expect(s.ses.calls).toHaveLength(0);

    const devEnv = { ...env, ENVIRONMENT: "development" };
    const outbox = await call<string>("GET", "/dev/outbox", { env: devEnv });
    expect(outbox.status).toBe(200);
    const page = outbox.body;
    expect(page).toContain("Queued for real");
    const link = /href="(\/dev\/outbox\/[^"]+\.eml)"/.exec(page)![1];
    const eml = await call<string>("GET", link, { env: devEnv });
    expect(eml.headers.get("content-type")).toContain("message/rfc822");
    expect(eml.body).toContain(`Message-ID: <${id}@${s.domain}>`);

    const production = await call("GET", "/dev/outbox", { env });
    expect(production.status).toBe(404);
  });
});
