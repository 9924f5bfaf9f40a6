import { env } from "cloudflare:workers";
import { eq, inArray } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getDb } from "../../../src/db/client";
import { emails } from "../../../src/db/schema";
import { CLAIM_LEASE_MS } from "../../../src/services/send/reasons";
import { sweepStuckEmails } from "../../../src/services/send/sweep";
import { buildSetProjectDisabled } from "../../../src/services/projects";
import { expectError } from "../../support/http";
import { sendingSetup } from "../../support/sending";
import type { Contact, Template, UpsertedContact } from "../../support/api";

afterEach(() => vi.restoreAllMocks());

type Setup = Awaited<ReturnType<typeof sendingSetup>>;
const db = () => getDb(env.DB);

async function sendTo(s: Setup, to: string[]) {
  const res = await s.send({ to, from: s.from, subject: "Hello", body: "<p>Hi</p>" });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.emails.map((e: { email: string }) => e.email) as string[];
}

const rows = (ids: string[]) =>
  db().select({ id: emails.id, status: emails.status, error: emails.error, updatedAt: emails.updatedAt }).from(emails).where(inArray(emails.id, ids));
const statusOf = async (id: string) => (await rows([id]))[0];

describe("a disabled project sends nothing more", () => {
  it("queued mail of a disabled project is marked FAILED with the reason and never reaches the provider", async () => {
    const s = await sendingSetup();
    const ids = await sendTo(s, ["a@example.com", "b@example.com"]);
    await buildSetProjectDisabled(db(), s.project.id, true);
    const result = await s.deliver();
    expect(s.ses.requests).toHaveLength(0);
    expect(result.explicitAcks).toHaveLength(2);
    for (const row of await rows(ids)) {
      expect(row.status).toBe("FAILED");
      expect(row.error).toMatch(/project is disabled/);
    }
  });
});

describe("no second delivery from the sweep", () => {
  it("a claim that expired while SENDING is settled as an explicit unknown outcome, never sent again", async () => {
    const s = await sendingSetup();
    const [id] = await sendTo(s, ["ada@example.com"]);
    const messages = s.queue.take();
    // A consumer claimed it and died before recording anything.
    const claimedAt = new Date(Date.now() - CLAIM_LEASE_MS - 60_000);
    await db().update(emails).set({ status: "SENDING", sendingAt: claimedAt, updatedAt: claimedAt }).where(eq(emails.id, id));

    await sweepStuckEmails(s.env);
    expect(s.queue.take().filter((m) => m.body.emailId === id)).toHaveLength(0);
    const row = await statusOf(id);
    expect(row.status).toBe("FAILED");
    expect(row.error).toMatch(/^Outcome unknown/);

    // The original message, redelivered late, sends nothing either.
    await s.deliver(messages.map((m) => m.body));
    expect(s.ses.requests).toHaveLength(0);
  });

  it("a provider call that hangs times out well inside the lease: an unknown outcome, FAILED with the reason, never retried", async () => {
    const s = await sendingSetup({ SES_TIMEOUT_MS: "200" });
    const [id] = await sendTo(s, ["ada@example.com"]);
    // SES never answers; the only way out is the Worker's own timeout, which aborts the request.
    const aborts: string[] = [];
    s.ses.handle = (request: Request) =>
      new Promise<Response>((_, reject) =>
        request.signal.addEventListener("abort", () => {
          aborts.push((request.signal.reason as Error | undefined)?.name ?? "abort");
          reject(request.signal.reason);
        }),
      );
    const messages = s.queue.messages.map((m) => m.body);
    const result = await s.deliver();
    expect(aborts).toEqual(["AbortError"]);
    expect(result.retryMessages).toHaveLength(0);
    const row = await statusOf(id);
    expect(row.status).toBe("FAILED");
    expect(row.error).toMatch(/^Outcome unknown: SES gave no answer: no answer within 200 ms/);
    // The message, redelivered, makes no second call.
    await s.deliver(messages);
    expect(aborts).toHaveLength(1);
  });
});

describe("sending rate: claims and tokens", () => {
  it("a token is only taken after a successful claim: a redelivered message for a sent email does not hold back the next one", async () => {
    const s = await sendingSetup({ SEND_RATE_PER_SECOND: "1" });
    const [first, second] = await sendTo(s, ["a@example.com", "b@example.com"]);
    const messages = s.queue.take().map((m) => m.body);
    await db().update(emails).set({ status: "SENT", sentAt: new Date() }).where(eq(emails.id, first));
    // The bucket holds one token: the redelivered (already SENT) message must not take it.
    await s.deliver(messages);
    expect(s.ses.calls.map((c) => c.to[0])).toEqual(["b@example.com"]);
    expect((await statusOf(second)).status).toBe("SENT");
  });

  it("deferring over the rate touches the record, so the sweep does not queue copies of mail waiting for its turn", async () => {
    const s = await sendingSetup({ SEND_RATE_PER_SECOND: "1" });
    const ids = await sendTo(s, ["a@example.com", "b@example.com", "c@example.com"]);
    // The mail has been waiting in the queue for a while already (earlier deferrals).
    const longAgo = new Date(Date.now() - CLAIM_LEASE_MS - 60_000);
    await db().update(emails).set({ updatedAt: longAgo }).where(inArray(emails.id, ids));
    await s.deliver();
    expect(s.ses.calls).toHaveLength(1);
    const deferred = s.queue.take();
    expect(deferred).toHaveLength(2);
    expect(deferred.every((m) => (m.delaySeconds ?? 0) >= 1)).toBe(true);
    for (const row of await rows(deferred.map((m) => m.body.emailId))) {
      expect(row.status).toBe("QUEUED");
      expect(row.updatedAt.getTime()).toBeGreaterThan(longAgo.getTime());
    }
    expect(await sweepStuckEmails(s.env)).toBe(0);
    expect(s.queue.take()).toHaveLength(0);
  });
});

describe("POST /v1/send: what a sender may not do", () => {
  it.each(["X-SES-CONFIGURATION-SET", "x-ses-message-tags", "X-SES-SOURCE-ARN", "X-Amz-Date"])(
    "custom header %s (provider control) is a 422 naming it, nothing queued",
    async (name) => {
      const s = await sendingSetup();
      const res = await s.send({ to: "ada@example.com", from: s.from, subject: "Hi", body: "<p>Hi</p>", headers: { [name]: "other-tenant" } });
      const error = expectError(res, 422, "VALIDATION_ERROR");
      expect(error.errors!.map((e) => e.field)).toEqual([`headers.${name}`]);
      expect(s.queue.messages).toHaveLength(0);
    },
  );

  it("subscribed:true with a MARKETING template does not re-subscribe or send to someone who unsubscribed: 400 INVALID_STATE", async () => {
    const s = await sendingSetup();
    const template = await s.project.api.post<Template>("/templates", { name: "News", subject: "News", body: "<p>News</p>", type: "MARKETING", from: s.from });
    expect(template.status).toBe(201);
    const contact = await s.project.api.post<UpsertedContact>("/contacts", { email: "gone@example.com", subscribed: false });
    const res = await s.send({ to: ["gone@example.com", "new@example.com"], template: template.body.id, subscribed: true });
    expectError(res, 400, "INVALID_STATE");
    expect(s.queue.messages).toHaveLength(0);
    expect((await s.project.api.get<Contact>(`/contacts/${contact.body.id}`)).body.subscribed).toBe(false);
    // A new contact may still be opted in by the send itself.
    const fresh = await s.send({ to: "new@example.com", template: template.body.id, subscribed: true });
    expect(fresh.status, JSON.stringify(fresh.body)).toBe(200);
  });
});
