/**
 * The provider call is made at most once per email (docs/reliability.md): a definite answer settles it
 * (refused: FAILED; throttled or 5xx: retried), no answer is an unknown outcome that is never retried and is
 * reconciled from SES's own events through the message tags; no claim outlives its lease.
 */
import { env } from "cloudflare:workers";
import { eq, inArray } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../../src/db/client";
import { emails, suppressions } from "../../../src/db/schema";
import { clearSnsKeyCache } from "../../../src/outside/sns";
import { CALL_DEADLINE_MS, CLAIM_LEASE_MS, OUTCOME_UNKNOWN_REASON, QUEUED_LEASE_MS } from "../../../src/services/send/reasons";
import { sweepStuckEmails } from "../../../src/services/send/sweep";
import { PROVIDER_CONCURRENCY } from "../../../src/services/send/deliver";
import { FIXED_SQL } from "../../../src/store/emails";
import { notification, sesEvent, sign, snsHandler } from "../../fakes/sns";
import { call } from "../../support/http";
import { sendingSetup } from "../../support/sending";
import type { Email, SesFeedbackResponse } from "../../support/api";
import { d1Outage } from "../../fakes/d1-outage";

afterEach(() => vi.restoreAllMocks());

type Setup = Awaited<ReturnType<typeof sendingSetup>>;
const db = () => getDb(env.DB);

async function setup(overrides = {}) {
  clearSnsKeyCache();
  const s = await sendingSetup({ SES_CONFIGURATION_SET: "events", ...overrides });
  s.serve(snsHandler);
  return s;
}

async function sendTo(s: Setup, to: string[]) {
  const res = await s.send({ to, from: s.from, subject: "Hello", body: "<p>Hi</p>" });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.emails.map((e: { email: string }) => e.email) as string[];
}

const emailOf = async (s: Setup, id: string) => (await s.get<Email>(`/emails/${id}`)).body;

/** Posts an SES event-publishing event through the (fake, signed) SNS topic to POST /webhooks/ses. */
async function publish(event: unknown) {
  const res = await call<SesFeedbackResponse>("POST", "/webhooks/ses", {
    rawBody: JSON.stringify(await sign(notification(event))),
    headers: { "Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.outcome;
}

describe("SendEmail carries the email's tags", () => {
  it("em_email and em_project, valid SES MessageTags (the fake refuses others)", async () => {
    const s = await setup();
    const [id] = await sendTo(s, ["ada@example.com"]);
    await s.deliver();
    expect(s.ses.calls[0].tags).toEqual({ em_email: id, em_project: s.project.id });
  });
});

describe("definite answers", () => {
  it("a refusal (400) is FAILED with SES's reason and the message is acked, never retried", async () => {
    const s = await setup();
    const [id] = await sendTo(s, ["ada@example.com"]);
    s.ses.failNext({ status: 400, errorType: "MessageRejected", message: "Email address is not verified." });
    const result = await s.deliver();
    expect(result.retryMessages).toHaveLength(0);
    expect(await emailOf(s, id)).toMatchObject({ status: "FAILED", error: expect.stringContaining("Email address is not verified") });
  });

  it("throttling (429) goes back to QUEUED and is retried; the sweep leaves it alone during its back-off, then it is sent once", async () => {
    const s = await setup();
    const [id] = await sendTo(s, ["ada@example.com"]);
    const [message] = s.queue.take();
    s.ses.failNext({ status: 429, errorType: "TooManyRequestsException", message: "Maximum sending rate exceeded." });
    const first = await s.deliver([message.body], 6);
    expect(first.retryMessages).toHaveLength(1);
    const delay = first.retryDelays[0] as number;
    expect(delay).toBeGreaterThanOrEqual(160);
    expect(await emailOf(s, id)).toMatchObject({ status: "QUEUED", error: expect.stringContaining("SES 429") });
    // Past the queued lease but inside its back-off: the sweep queues no copy that would cut the back-off short.
    expect(await sweepStuckEmails(s.env, new Date(Date.now() + QUEUED_LEASE_MS + 1_000))).toBe(0);
    // Its retry message lost: once the back-off and a lease have passed, the sweep queues it again.
    expect(await sweepStuckEmails(s.env, new Date(Date.now() + delay * 1000 + QUEUED_LEASE_MS + 1_000))).toBeGreaterThanOrEqual(1);
    const copies = s.queue.take().filter((m) => m.body.emailId === id);
    expect(copies).toHaveLength(1);
    await s.deliver([message.body, copies[0].body], 7);
    expect(s.ses.calls).toHaveLength(1);
    expect(await emailOf(s, id)).toMatchObject({ status: "SENT", error: null });
  });
});

describe("unknown outcomes are never sent again, and SES's events reconcile them", () => {
  it("a call that times out is FAILED 'Outcome unknown'; SES's Delivery event, found by the tags, makes it DELIVERED with SES's id", async () => {
    const s = await setup({ SES_TIMEOUT_MS: "200" });
    const [id] = await sendTo(s, ["ada@example.com"]);
    const [message] = s.queue.take();
    s.ses.failNext({ hang: true });
    const result = await s.deliver([message.body]);
    expect(result.retryMessages).toHaveLength(0);
    expect(await emailOf(s, id)).toMatchObject({ status: "FAILED", providerMessageId: null, error: expect.stringMatching(/^Outcome unknown:/) });
    // SES had taken it (the fake kept it): its Delivery event names it only by its tags.
    const [taken] = s.ses.calls;
    expect(await publish(sesEvent("Delivery", taken))).toBe("delivered");
    expect(await emailOf(s, id)).toMatchObject({ status: "DELIVERED", providerMessageId: taken.messageId, error: null, failedAt: null });
    // The redelivered message makes no second call.
    await s.deliver([message.body]);
    expect(s.ses.requests.filter((r) => r.path === "/v2/email/outbound-emails")).toHaveLength(1);
  });

  it("a claim whose invocation died is settled by the next sweep after the lease; SES's Send event reconciles it to SENT", async () => {
    const s = await setup();
    const [id] = await sendTo(s, ["ada@example.com"]);
    // As if SES took the message and the invocation died before recording it.
    await s.deliver();
    const [taken] = s.ses.calls;
    const claimedAt = new Date(Date.now() - CLAIM_LEASE_MS - 1_000);
    await db().update(emails).set({ status: "SENDING", providerMessageId: null, sentAt: null, updatedAt: claimedAt }).where(eq(emails.id, id));
    expect(await sweepStuckEmails(s.env)).toBeGreaterThanOrEqual(1);
    expect(await emailOf(s, id)).toMatchObject({ status: "FAILED", error: OUTCOME_UNKNOWN_REASON });

    expect(await publish(sesEvent("Send", taken))).toBe("sent");
    expect(await emailOf(s, id)).toMatchObject({ status: "SENT", providerMessageId: taken.messageId, error: null });
    // Later events find it by SES's id as for any sent email.
    expect(await publish(sesEvent("Delivery", taken))).toBe("delivered");
    expect((await emailOf(s, id)).status).toBe("DELIVERED");
  });

  it("tags naming another project's email, or an email that was sent normally, reconcile nothing", async () => {
    const s = await setup();
    const [mine] = await sendTo(s, ["ada@example.com"]);
    await s.deliver();
    const sesId = s.ses.calls[0].messageId;
    // (A second setup answers every outbound call from here on: its fakes replace the first's.)
    const other = await setup();
    const [theirs] = await sendTo(other, ["bob@example.com"]);
    other.queue.take();
    await db().update(emails).set({ status: "FAILED", error: OUTCOME_UNKNOWN_REASON }).where(eq(emails.id, theirs));
    // A forged pairing: other's email id under this project's id.
    const forged = { messageId: "ses-forged", to: ["bob@example.com"], tags: { em_email: theirs, em_project: s.project.id } };
    expect(await publish(sesEvent("Delivery", forged))).toBe("unknown-email");
    expect((await emailOf(other, theirs)).status).toBe("FAILED");
    // An email with SES's id recorded is not re-keyed by an event with another id.
    const again = { messageId: "ses-other", to: ["ada@example.com"], tags: { em_email: mine, em_project: s.project.id } };
    expect(await publish(sesEvent("Send", again))).toBe("unknown-email");
    expect((await emailOf(s, mine)).providerMessageId).toBe(sesId);
  });

  it("a SENT answer that comes after the sweep settled the claim as unknown is still recorded", async () => {
    const s = await setup();
    const [id] = await sendTo(s, ["ada@example.com"]);
    const handle = s.ses.handle;
    s.ses.handle = async (request: Request) => {
      // The sweep runs while the call is in flight (a slow D1 write, say).
      await db().update(emails).set({ status: "FAILED", error: OUTCOME_UNKNOWN_REASON, failedAt: new Date() }).where(eq(emails.id, id));
      return handle(request);
    };
    await s.deliver();
    expect(await emailOf(s, id)).toMatchObject({ status: "SENT", providerMessageId: s.ses.calls[0].messageId, error: null, failedAt: null });
  });
});

describe("a claim whose invocation died", () => {
  it("is given back and sent once when its call had not started; settled as unknown when it had", async () => {
    const s = await setup();
    const [waiting, started] = await sendTo(s, ["waiting@example.com", "started@example.com"]);
    s.queue.take();
    // A consumer claimed both, marked one call as started (sending_at) and died.
    const claimedAt = new Date(Date.now() - CLAIM_LEASE_MS - 1_000);
    await db().update(emails).set({ status: "SENDING", sendingAt: null, updatedAt: claimedAt, attempts: 1 }).where(eq(emails.id, waiting));
    await db().update(emails).set({ status: "SENDING", sendingAt: claimedAt, updatedAt: claimedAt, attempts: 1 }).where(eq(emails.id, started));
    expect(await sweepStuckEmails(s.env)).toBeGreaterThanOrEqual(2);
    expect(await emailOf(s, started)).toMatchObject({ status: "FAILED", error: OUTCOME_UNKNOWN_REASON });
    expect(await emailOf(s, waiting)).toMatchObject({ status: "QUEUED", attempts: 0 });
    const requeued = s.queue.take().filter((m) => [waiting, started].includes(m.body.emailId));
    expect(requeued.map((m) => m.body.emailId)).toEqual([waiting]);
    await s.deliver(requeued.map((m) => m.body));
    expect(s.ses.calls.map((c) => c.to)).toEqual([["waiting@example.com"]]);
    expect((await emailOf(s, waiting)).status).toBe("SENT");
  });

  it("the consumer marks each call as started just before it makes it", async () => {
    const s = await setup();
    const [id] = await sendTo(s, ["ada@example.com"]);
    const handle = s.ses.handle;
    const seen: (Date | null)[] = [];
    s.ses.handle = async (request: Request) => {
      const [row] = await db().select({ sendingAt: emails.sendingAt, status: emails.status }).from(emails).where(eq(emails.id, id));
      seen.push(row.status === "SENDING" ? row.sendingAt : null);
      return handle(request);
    };
    await s.deliver();
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(Date);
  });
});

describe("no mark, no call", () => {
  it("when marking a wave as started fails, that wave and the rest are given back to QUEUED without a call; earlier outcomes are kept", async () => {
    // The second wave's mark fails (D1 unavailable for a moment).
    const failing = d1Outage({ statement: { sql: FIXED_SQL.MARK_CALLS_STARTED_SQL, nth: 2 }, message: "D1 is unavailable" });
    const s = await setup({ DB: failing });
    const ids = await sendTo(
      s,
      Array.from({ length: 10 }, (_, i) => `m${i}@example.com`),
    );
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const result = await s.deliver();
    errors.mockRestore();
    expect(s.ses.calls).toHaveLength(PROVIDER_CONCURRENCY);
    const rows = await db().select({ status: emails.status, attempts: emails.attempts }).from(emails).where(inArray(emails.id, ids));
    expect(rows.filter((r) => r.status === "SENT")).toHaveLength(PROVIDER_CONCURRENCY);
    expect(rows.filter((r) => r.status === "QUEUED")).toHaveLength(10 - PROVIDER_CONCURRENCY);
    expect(rows.filter((r) => r.status === "QUEUED").every((r) => r.attempts === 0)).toBe(true);
    expect(result.retryMessages).toHaveLength(0);
    expect(s.queue.take()).toHaveLength(10 - PROVIDER_CONCURRENCY);
  });
});

describe("no claim outlives its lease", () => {
  it("past the batch's call deadline the remaining claims go back to QUEUED before any call, their messages re-queued", async () => {
    const s = await setup();
    const ids = await sendTo(
      s,
      Array.from({ length: 10 }, (_, i) => `r${i}@example.com`),
    );
    const messages = s.queue.take().map((m) => m.body);
    const realNow = Date.now.bind(Date);
    let offset = 0;
    vi.spyOn(Date, "now").mockImplementation(() => realNow() + offset);
    const handle = s.ses.handle;
    s.ses.handle = (request: Request) => {
      // The first call took until past the deadline.
      offset = CALL_DEADLINE_MS + 1_000;
      return handle(request);
    };
    const result = await s.deliver(messages);
    vi.mocked(Date.now).mockRestore();
    const called = s.ses.calls.length;
    expect(called).toBeGreaterThanOrEqual(1);
    expect(called).toBeLessThan(10);
    const rows = await db().select({ id: emails.id, status: emails.status, attempts: emails.attempts }).from(emails).where(inArray(emails.id, ids));
    expect(rows.filter((r) => r.status === "SENDING")).toEqual([]);
    const released = rows.filter((r) => r.status === "QUEUED");
    expect(released).toHaveLength(10 - called);
    expect(released.every((r) => r.attempts === 0)).toBe(true);
    // Acked, and re-queued as new messages at once.
    expect(result.retryMessages).toHaveLength(0);
    expect(new Set(s.queue.take().map((m) => m.body.emailId))).toEqual(new Set(released.map((r) => r.id)));
  });
});

describe("a bounce applies only to the recipients it names", () => {
  it("a bounce naming another address changes nothing; one naming the email's own recipient bounces it with that recipient's diagnostic", async () => {
    const s = await setup();
    const [id] = await sendTo(s, ["ada@example.com"]);
    await s.deliver();
    const [taken] = s.ses.calls;
    expect(await publish(sesEvent("Bounce", taken, { recipients: ["someone-else@example.com", "third@example.com"] }))).toBe("not-recipient");
    expect((await emailOf(s, id)).status).toBe("SENT");
    const suppressed = await db().select().from(suppressions).where(eq(suppressions.projectId, s.project.id));
    expect(suppressed).toEqual([]);

    expect(await publish(sesEvent("Bounce", taken, { recipients: ["other@example.com", "Ada@Example.com"] }))).toBe("bounced");
    expect(await emailOf(s, id)).toMatchObject({ status: "BOUNCED", error: "smtp; 550 5.1.1 <Ada@Example.com> user unknown" });
    const after = await db().select().from(suppressions).where(eq(suppressions.projectId, s.project.id));
    expect(after.map((r) => r.email)).toEqual(["ada@example.com"]);
  });
});
