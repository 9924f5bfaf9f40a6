import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { getDb } from "../../src/db/client";
import { buildResumeSending } from "../../src/services/projects";
import { KEY_CACHE_TTL_MS } from "../../src/services/api-keys";
import { SENDING_PAUSED_REASON } from "../../src/services/send/reasons";
import { notification, sesBounce, sign, snsHandler } from "../fakes/sns";
import { call, expectError, type JsonResponse } from "../support/http";
import { sendingSetup } from "../support/sending";

afterEach(() => vi.restoreAllMocks());

/** A small minimum volume so a test can reach it; the thresholds are the defaults (5 % bounces, 0.1 % complaints). */
const SETTINGS = { REPUTATION_MIN_SENT: "20", SEND_RATE_PER_SECOND: "1000" };

interface SendingStatus {
  paused: boolean;
  pausedAt: string | null;
  reason: string | null;
  window: { days: number; sent: number; bounced: number; complained: number };
}
interface SendResult {
  success: boolean;
  data: { emails: { email: string }[] };
}
interface EmailView {
  status: string;
  error: string | null;
}

let tags = 0;

/**
 * A project with a verified domain behind the fake SES, whose message ids are
 * unique to it (feedback finds mail by them), and an app whose key cache runs
 * on a clock the test moves.
 */
async function sender() {
  const s = await sendingSetup(SETTINGS);
  s.serve(snsHandler);
  const tag = `p${++tags}-${crypto.randomUUID().slice(0, 8)}`;
  const messageIdOf = new Map<string, string>();
  const handle = s.ses.handle;
  s.ses.handle = async (request: Request) => {
    const to = ((await request.clone().json()) as { Destination?: { ToAddresses?: string[] } }).Destination?.ToAddresses?.[0] ?? "";
    const response = await handle(request);
    if (!response.ok) return response;
    const messageId = `${tag}-${((await response.json()) as { MessageId: string }).MessageId}`;
    messageIdOf.set(to, messageId);
    return Response.json({ MessageId: messageId });
  };
  const clock = { now: Date.now() };
  const app = createApp({ now: () => clock.now });
  const api = <T>(method: string, path: string, body?: unknown): Promise<JsonResponse<T>> =>
    call<T>(method, path, { key: s.project.secretKey, body, env: s.env, handler: app.fetch });
  /** Sends one email to each address and runs the real consumer: all SENT through the fake SES. */
  async function sendAndDeliver(to: string[]) {
    for (let i = 0; i < to.length; i += 50) {
      const res = await api<SendResult>("POST", "/v1/send", { to: to.slice(i, i + 50), from: s.from, subject: "Hi", body: "<p>Hi</p>" });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    await s.deliver();
  }
  /** SES reports a permanent bounce of the mail to `to` through SNS. */
  async function bounce(to: string) {
    const res = await call<{ data: { outcome: string } }>("POST", "/webhooks/ses", {
      rawBody: JSON.stringify(await sign(notification(sesBounce(messageIdOf.get(to)!, to)))),
      headers: { "Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
    });
    expect(res.body.data.outcome).toBe("bounced");
  }
  async function complain(to: string) {
    const complaint = {
      eventType: "Complaint",
      mail: { timestamp: new Date().toISOString(), messageId: messageIdOf.get(to)!, source: s.from, destination: [to] },
      complaint: { complainedRecipients: [{ emailAddress: to }], timestamp: new Date().toISOString(), feedbackId: `fb-${crypto.randomUUID()}` },
    };
    const res = await call<{ data: { outcome: string } }>("POST", "/webhooks/ses", {
      rawBody: JSON.stringify(await sign(notification(complaint))),
      headers: { "Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
    });
    expect(res.body.data.outcome).toBe("complained");
  }
  /** The key cache's bound passes: a pause or resume is seen by every request after it. */
  const later = () => {
    clock.now += KEY_CACHE_TTL_MS + 1;
  };
  /** The cron tick (the Worker's real scheduled handler), then the key cache's bound passes. */
  async function cron() {
    await s.tick(new Date());
    later();
  }
  const send = (to: string) => api<SendResult>("POST", "/v1/send", { to, from: s.from, subject: "Again", body: "<p>Again</p>" });
  return { s, api, sendAndDeliver, bounce, complain, cron, later, send };
}

const addresses = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}${i}@example.com`);

describe("reputation breaker", () => {
  it("pauses a project past 5 % bounces: its sends get 403 SENDING_PAUSED, its queued mail fails, another project is unaffected; resume restores sending", async () => {
    // Each setup answers the Worker's outgoing requests from its own fakes, the latest set up
    // taking over: the bad project's mail and feedback go first, then the good one is set up.
    const bad = await sender();
    const badTo = addresses(20, "bad");
    await bad.sendAndDeliver(badTo);
    // 2 of 20 (10 %) bounce for the bad project.
    await bad.bounce(badTo[0]);
    await bad.bounce(badTo[1]);
    // Mail the bad project queued before the cron runs; delivered after it.
    const waiting = await bad.send("later@example.com");
    expect(waiting.status).toBe(200);
    const good = await sender();
    await good.sendAndDeliver(addresses(20, "good"));
    const sesCalls = () => bad.s.ses.calls.length + good.s.ses.calls.length;

    await bad.cron();
    await good.cron();

    const status = await bad.api<SendingStatus>("GET", "/project/sending");
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ paused: true, window: { days: 7, sent: 20, bounced: 2, complained: 0 } });
    expect(status.body.reason).toMatch(/bounce rate 10(\.0+)?%/i);

    const refused = await bad.send("new@example.com");
    expectError(refused, 403, "SENDING_PAUSED");
    expect(JSON.stringify(refused.body)).toMatch(/bounce rate/i);
    // Campaign sends too.
    const campaign = await bad.api<{ id: string }>("POST", "/campaigns", {
      name: "News",
      subject: "News",
      body: "<p>News</p>",
      from: bad.s.from,
      audienceType: "ALL",
    });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(201);
    expectError(await bad.api("POST", `/campaigns/${campaign.body.id}/send`), 403, "SENDING_PAUSED");
    expectError(await bad.api("POST", `/campaigns/${campaign.body.id}/test`, { email: "me@example.com" }), 403, "SENDING_PAUSED");
    // Reading still works.
    expect((await bad.api("GET", "/emails")).status).toBe(200);

    // The mail queued before the pause is not sent: it fails with the reason.
    const callsBefore = sesCalls();
    await bad.s.deliver();
    expect(sesCalls()).toBe(callsBefore);
    const failed = await bad.api<EmailView>("GET", `/emails/${waiting.body.data.emails[0].email}`);
    expect(failed.body).toMatchObject({ status: "FAILED", error: SENDING_PAUSED_REASON });

    // Another project on the same shared account is unaffected.
    expect((await good.api<SendingStatus>("GET", "/project/sending")).body.paused).toBe(false);
    expect((await good.send("fine@example.com")).status).toBe(200);

    // The owner resumes it with the secret key: sending works again, with a fresh window.
    const resumed = await bad.api<SendingStatus>("POST", "/project/sending/resume");
    expect(resumed.status, JSON.stringify(resumed.body)).toBe(200);
    expect(resumed.body).toMatchObject({ paused: false, reason: null, window: { sent: 0, bounced: 0 } });
    bad.later();
    bad.s.queue.take();
    const again = await bad.send("again@example.com");
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    await bad.s.deliver();
    expect(sesCalls()).toBe(callsBefore + 1);
    expect((await bad.api<EmailView>("GET", `/emails/${again.body.data.emails[0].email}`)).body.status).toBe("SENT");
    // The next tick does not pause it again: the old bounces are not in the fresh window.
    await bad.cron();
    expect((await bad.api<SendingStatus>("GET", "/project/sending")).body.paused).toBe(false);
  });

  it("past 0.1 % complaints the project is paused too; a second API resume inside the window is refused, the operator's resume works", async () => {
    const p = await sender();
    const to = addresses(20, "c");
    await p.sendAndDeliver(to);
    await p.complain(to[0]);
    await p.cron();
    const status = await p.api<SendingStatus>("GET", "/project/sending");
    expect(status.body).toMatchObject({ paused: true, window: { sent: 20, complained: 1 } });
    expect(status.body.reason).toMatch(/complaint rate 5(\.0+)?%/i);

    expect((await p.api("POST", "/project/sending/resume")).status).toBe(200);
    p.later();
    // Paused again (more complaints after the resume).
    const more = addresses(20, "c2");
    await p.sendAndDeliver(more);
    await p.complain(more[0]);
    await p.cron();
    expect((await p.api<SendingStatus>("GET", "/project/sending")).body.paused).toBe(true);
    // The owner's API resume works once per window; then only the operator can.
    const second = await p.api("POST", "/project/sending/resume");
    expectError(second, 403, "SENDING_PAUSED");
    expect(JSON.stringify(second.body)).toContain("npm run project -- resume");
    expectError(await p.send("x@example.com"), 403, "SENDING_PAUSED");

    // `npm run project -- resume <id>` runs these statements.
    await getDb(env.DB).batch(buildResumeSending(getDb(env.DB), p.s.project.id));
    await p.cron();
    expect((await p.api<SendingStatus>("GET", "/project/sending")).body.paused).toBe(false);
    expect((await p.send("y@example.com")).status).toBe(200);
  });

  it("under the minimum volume nothing is paused, whatever the rates", async () => {
    const p = await sender();
    const to = addresses(10, "few");
    await p.sendAndDeliver(to);
    for (const address of to.slice(0, 5)) await p.bounce(address);
    await p.complain(to[5]);
    await p.cron();
    const status = await p.api<SendingStatus>("GET", "/project/sending");
    expect(status.body).toMatchObject({ paused: false, window: { sent: 10, bounced: 5, complained: 1 } });
    expect((await p.send("still@example.com")).status).toBe(200);
  });

  it("a project that was never paused: resume is a no-op answering the state", async () => {
    const p = await sender();
    const resumed = await p.api<SendingStatus>("POST", "/project/sending/resume");
    expect(resumed.status).toBe(200);
    expect(resumed.body).toMatchObject({ paused: false, pausedAt: null, reason: null });
  });
});
