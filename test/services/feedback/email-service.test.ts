import { env } from "cloudflare:workers";
import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getDb } from "../../../src/db/client";
import { emails as emailsTable, events, suppressions } from "../../../src/db/schema";
import { EMAIL_EVENTS_QUEUE } from "../../../src/services/feedback/email-service";
import { fakeEmailService } from "../../fakes/email-service";
import { sendingSetup } from "../../support/sending";
import { runConsumer } from "../../support/queues";
import type { Contact, Email, EventList } from "../../support/api";

/**
 * Email Sending events (Queues event subscription) through the Worker's real
 * queue handler, for mail sent with EMAIL_PROVIDER=cloudflare through the fake
 * binding. Event bodies follow
 * https://developers.cloudflare.com/email-service/platform/event-subscriptions/.
 */
async function sentEmail(to = "ada@example.com") {
  const service = fakeEmailService();
  const s = await sendingSetup({ EMAIL_PROVIDER: "cloudflare", EMAIL: service.binding, PUBLIC_URL: "https://mail.edge-mail.test" });
  await s.project.api.post("/contacts", { email: to, subscribed: true });
  const res = await s.send({ to, from: s.from, subject: "Hello", body: "<p>Hi</p>" });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const id = res.body.data.emails[0].email as string;
  await s.deliver();
  expect((await s.get<Email>(`/emails/${id}`)).body.status).toBe("SENT");
  return { s, id, to, messageId: service.sent[0].messageId };
}

let eventCounter = 0;
function event(kind: string, messageId: string, payload: object = {}, timestamp = "2026-06-01T02:48:57.132Z") {
  return {
    type: `cf.email.sending.message.${kind}`,
    source: { type: "email.sending", zoneId: "023e105f4ecef8ad9ca31a8372d0c353", domain: "example.com" },
    payload: { eventId: `evt-${++eventCounter}`, messageId, sender: "hello@example.com", recipient: "ada@example.com", terminal: true, ...payload },
    metadata: { accountId: "f9f7", eventSubscriptionId: "1830", eventSchemaVersion: 1, eventTimestamp: timestamp },
  };
}

const consume = (bodies: unknown[]) =>
  runConsumer(
    EMAIL_EVENTS_QUEUE,
    { ...env },
    bodies.map((body) => ({ body })),
  );

const suppressionRows = (projectId: string) => getDb(env.DB).select().from(suppressions).where(eq(suppressions.projectId, projectId));
const eventCount = async (emailId: string) => (await getDb(env.DB).select({ n: sql<number>`count(*)` }).from(events).where(eq(events.emailId, emailId)))[0].n;

describe("Cloudflare Email Service events", () => {
  it("message.delivered marks DELIVERED with the event's time (with or without the id's angle brackets)", async () => {
    const { s, id, messageId } = await sentEmail();
    expect(messageId).toMatch(/^<.+>$/);
    const result = await consume([event("delivered", messageId.slice(1, -1), { delivery: { status: "delivered", smtpStatusCode: "250" } })]);
    expect(result.explicitAcks).toHaveLength(1);
    const email = (await s.get<Email>(`/emails/${id}`)).body;
    expect(email.status).toBe("DELIVERED");
    expect(new Date(email.deliveredAt!).toISOString()).toBe("2026-06-01T02:48:57.132Z");

    const other = await sentEmail("bob@example.com");
    await consume([event("delivered", other.messageId)]);
    expect((await other.s.get<Email>(`/emails/${other.id}`)).body.status).toBe("DELIVERED");
  });

  it("a hard message.bounced marks BOUNCED, suppresses the address, unsubscribes the contact, records email.bounced once", async () => {
    const { s, id, to, messageId } = await sentEmail();
    const bounced = event("bounced", messageId, {
      delivery: { status: "bounced", smtpStatusCode: "550", smtpEnhancedStatusCode: "5.1.1", smtpResponse: "550 5.1.1 User unknown" },
      bounce: { type: "hard", classification: "permanent_failure", reason: "550 5.1.1 User unknown" },
    });
    await consume([bounced]);
    const email = (await s.get<Email>(`/emails/${id}`)).body;
    expect(email).toMatchObject({ status: "BOUNCED", error: "550 5.1.1 User unknown" });
    expect(await suppressionRows(s.project.id)).toMatchObject([{ email: to, reason: "BOUNCE", detail: "550 5.1.1 User unknown" }]);
    expect(email.contactId).toBeTruthy();
    expect((await s.project.api.get<Contact>(`/contacts/${email.contactId}`)).body.subscribed).toBe(false);
    const items = (await s.project.api.get<EventList>("/events?name=email.bounced")).body.data.items;
    expect(items).toHaveLength(1);
    expect(items[0].data).toMatchObject({ bounceType: "Permanent", bounceSubType: "permanent_failure", smtpStatus: "5.1.1" });

    // The queue delivers at least once: a redelivery changes nothing.
    const before = await eventCount(id);
    await consume([bounced]);
    expect(await eventCount(id)).toBe(before);
    expect(await suppressionRows(s.project.id)).toHaveLength(1);

    // Later mail to the address is suppressed like after an SES bounce.
    const again = await s.send({ to, from: s.from, subject: "Again", body: "<p>x</p>" });
    expect(again.status).toBe(200);
    expect(again.body.data.emails).toHaveLength(0);
    expect(again.body.data.suppressed).toEqual([{ email: to, reason: "BOUNCE", stream: "ALL", gate: "SUPPRESSED" }]);
  });

  it("a soft message.bounced only records a Transient email.bounced event", async () => {
    const { s, id, messageId } = await sentEmail();
    await consume([event("bounced", messageId, { bounce: { type: "soft", classification: "temporary_failure", reason: "452 4.2.2 Mailbox full" } })]);
    expect((await s.get<Email>(`/emails/${id}`)).body.status).toBe("SENT");
    expect(await suppressionRows(s.project.id)).toHaveLength(0);
    const items = (await s.project.api.get<EventList>("/events?name=email.bounced")).body.data.items;
    expect(items[0].data).toMatchObject({ bounceType: "Transient", diagnosticCode: "452 4.2.2 Mailbox full" });
  });

  it("message.complained after delivery marks COMPLAINED, suppresses and unsubscribes", async () => {
    const { s, id, to, messageId } = await sentEmail();
    await consume([event("delivered", messageId), event("complained", messageId, { complaint: { type: "abuse" } })]);
    expect((await s.get<Email>(`/emails/${id}`)).body.status).toBe("COMPLAINED");
    expect(await suppressionRows(s.project.id)).toMatchObject([{ email: to, reason: "COMPLAINT", detail: "Complaint (abuse)" }]);
    const contactId = (await s.get<Email>(`/emails/${id}`)).body.contactId;
    expect((await s.project.api.get<Contact>(`/contacts/${contactId}`)).body.subscribed).toBe(false);
    const items = (await s.project.api.get<EventList>("/events?name=email.complained")).body.data.items;
    expect(items[0].data).toMatchObject({ complaintFeedbackType: "abuse" });
  });

  it("message.rejected / message.failed after acceptance mark FAILED with the reason, but never undo a delivery", async () => {
    const { s, id, messageId } = await sentEmail();
    await consume([event("rejected", messageId, { rejection: { reason: "suppressed", party: "recipient", detail: "Recipient is suppressed" } })]);
    expect((await s.get(`/emails/${id}`)).body).toMatchObject({
      status: "FAILED",
      error: "Rejected by Cloudflare Email Service: suppressed: Recipient is suppressed",
    });

    const other = await sentEmail("bob@example.com");
    await consume([event("delivered", other.messageId), event("failed", other.messageId, { failure: { reason: "delivery_failed" } })]);
    expect((await other.s.get<Email>(`/emails/${other.id}`)).body.status).toBe("DELIVERED");
  });

  it("deferred, other sources, unknown mail and malformed bodies are acked and change nothing", async () => {
    const { s, id, messageId } = await sentEmail();
    const before = await eventCount(id);
    const result = await consume([
      event("deferred", messageId, { terminal: false, bounce: { type: "soft", classification: "temporary_failure" } }),
      { ...event("delivered", messageId), type: "cf.workers.builds.worker.succeeded" },
      event("bounced", "<not-ours@example.com>", { bounce: { type: "hard" } }),
      event("delivered", ""),
      { type: "cf.email.sending.message.delivered" },
      "not json",
      null,
    ]);
    expect(result.explicitAcks).toHaveLength(7);
    expect(result.retryMessages).toHaveLength(0);
    expect((await s.get<Email>(`/emails/${id}`)).body.status).toBe("SENT");
    expect(await eventCount(id)).toBe(before);
    expect(await suppressionRows(s.project.id)).toHaveLength(0);
  });
});

describe("empty provider message ids", () => {
  it("mail accepted without a message id stores none (NULL), and an event whose id is empty ('<>') changes no email", async () => {
    // SES accepts a message but its answer carries no MessageId.
    const s = await sendingSetup();
    s.ses.handle = async () => Response.json({});
    const res = await s.send({ to: "noid@example.com", from: s.from, subject: "Hi", body: "<p>Hi</p>" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const id = res.body.data.emails[0].email;
    await s.deliver();
    const email = (await s.get<Email>(`/emails/${id}`)).body;
    expect(email).toMatchObject({ status: "SENT", providerMessageId: null });

    // A row stored with an empty id by earlier code is never matched by an empty event id either.
    const legacy = await sentEmail("legacy@example.com");
    await getDb(env.DB).update(emailsTable).set({ providerMessageId: "" }).where(eq(emailsTable.id, legacy.id));
    const result = await consume([event("delivered", "<>"), event("delivered", "")]);
    expect(result.explicitAcks).toHaveLength(2);
    expect((await legacy.s.get<Email>(`/emails/${legacy.id}`)).body.status).toBe("SENT");
    expect((await s.get<Email>(`/emails/${id}`)).body.status).toBe("SENT");
  });
});
