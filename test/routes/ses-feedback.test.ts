import { env } from "cloudflare:workers";
import { eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { getDb } from "../../src/db/client";
import { contacts, emails, events, suppressions } from "../../src/db/schema";
import { recordEngagement } from "../../src/services/emails/status";
import { CERT_FAILURE_TTL_MS, clearSnsKeyCache, spkiFromCertificate, pemToDer } from "../../src/outside/sns";
import { findSuppressed } from "../../src/services/suppressions";
import { CERT_URL, certPem, notification, sign, TOPIC, type Sns } from "../fakes/sns";
import { eventsOfEmail, getContact, getEmail, insertSentEmail } from "../support/emails";
import { call, expectError, newProject, type CallOptions } from "../support/http";
import type { Contact, EventList, SesFeedbackResponse } from "../support/api";

const CN_CERT_URL = "https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-test.pem";
const SUBSCRIBE_URL = `https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=${encodeURIComponent(TOPIC)}&Token=abc123`;

const mail = (messageId: string, to: string) => ({
  timestamp: new Date().toISOString(),
  messageId,
  source: "news@sender.example",
  destination: [to],
});

const deliveryOf = (e: { providerMessageId: string; to: string }) => ({
  notificationType: "Delivery",
  mail: mail(e.providerMessageId, e.to),
  delivery: { timestamp: "2026-07-01T10:00:00.000Z", recipients: [e.to], smtpResponse: "250 ok", processingTimeMillis: 500 },
});

const bounceOf = (
  e: { providerMessageId: string; to: string },
  bounceType: "Permanent" | "Transient",
  format: "notificationType" | "eventType" = "notificationType",
) => ({
  [format]: "Bounce",
  mail: mail(e.providerMessageId, e.to),
  bounce: {
    bounceType,
    bounceSubType: bounceType === "Permanent" ? "General" : "MailboxFull",
    bouncedRecipients: [{ emailAddress: e.to, action: "failed", status: "5.1.1", diagnosticCode: "smtp; 550 5.1.1 user unknown" }],
    timestamp: new Date().toISOString(),
    feedbackId: `fb-${crypto.randomUUID()}`,
  },
});

const complaintOf = (e: { providerMessageId: string; to: string }, format: "notificationType" | "eventType" = "notificationType") => ({
  [format]: "Complaint",
  mail: mail(e.providerMessageId, e.to),
  complaint: {
    complainedRecipients: [{ emailAddress: e.to }],
    timestamp: new Date().toISOString(),
    feedbackId: `fb-${crypto.randomUUID()}`,
    complaintFeedbackType: "abuse",
  },
});

/** POSTs as SNS does: JSON in a text/plain body (to the Worker, or to `handler`: an app with a clock of its own); the body typed as the success response. */
const post = <T = SesFeedbackResponse>(body: unknown, handler?: CallOptions["handler"]) =>
  call<T>("POST", "/webhooks/ses", {
    rawBody: typeof body === "string" ? body : JSON.stringify(body),
    headers: { "Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
    handler,
  });

// ---- the fake SNS host ----

let fetched: string[] = [];
let certStatus = 200;
let certBody = certPem;

beforeEach(() => {
  fetched = [];
  certStatus = 200;
  certBody = certPem;
  clearSnsKeyCache();
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input: RequestInfo | URL) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    fetched.push(url);
    if (url === CERT_URL || url === CN_CERT_URL) return new Response(certBody, { status: certStatus });
    if (url.startsWith("https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription")) {
      return new Response("<ConfirmSubscriptionResponse/>", { status: 200 });
    }
    return new Response("unexpected fetch", { status: 599 });
  });
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** Rows in every table feedback can write to, so "nothing changed" is checked, not assumed. */
async function tableCounts() {
  const db = getDb(env.DB);
  const count = async (table: typeof suppressions | typeof events | typeof emails | typeof contacts) =>
    (await db.select({ n: sql<number>`count(*)` }).from(table))[0].n;
  const unsubscribed = (await db.select({ n: sql<number>`count(*)` }).from(contacts).where(eq(contacts.subscribed, false)))[0].n;
  return { suppressions: await count(suppressions), events: await count(events), emails: await count(emails), contacts: await count(contacts), unsubscribed };
}

async function suppressionRows(projectId: string) {
  return getDb(env.DB).select().from(suppressions).where(eq(suppressions.projectId, projectId));
}

describe("POST /webhooks/ses: SES feedback", () => {
  it("Delivery marks the email DELIVERED with its delivery time", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const res = await post(await sign(notification(deliveryOf(email))));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ success: true, data: { type: "Notification", outcome: "delivered" } });
    const row = await getEmail(email.id);
    expect(row.status).toBe("DELIVERED");
    expect(row.deliveredAt?.toISOString()).toBe("2026-07-01T10:00:00.000Z");
    expect(fetched).toEqual([CERT_URL]);
  });

  it("a permanent Bounce marks BOUNCED, suppresses the address, unsubscribes the contact, records email.bounced once", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const message = await sign(notification(bounceOf(email, "Permanent")));
    const res = await post(message);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.outcome).toBe("bounced");

    const row = await getEmail(email.id);
    expect(row.status).toBe("BOUNCED");
    expect(row.bouncedAt).toBeInstanceOf(Date);
    expect(row.error).toBe("smtp; 550 5.1.1 user unknown");
    expect(await suppressionRows(p.id)).toMatchObject([{ email: email.to, reason: "BOUNCE", detail: "smtp; 550 5.1.1 user unknown" }]);
    expect((await findSuppressed(getDb(env.DB), p.id, [email.to.toUpperCase()])).get(email.to)).toEqual({ reason: "BOUNCE", stream: "ALL" });
    expect((await p.api.get<Contact>(`/contacts/${email.contactId}`)).body.subscribed).toBe(false);

    // SNS redelivers: nothing new.
    expect((await post(message)).status).toBe(200);
    const bounced = (await p.api.get<EventList>("/events?name=email.bounced")).body.data.items;
    expect(bounced).toHaveLength(1);
    expect(bounced[0]).toMatchObject({
      contactId: email.contactId,
      emailId: email.id,
      data: { bounceType: "Permanent", bounceSubType: "General", diagnosticCode: "smtp; 550 5.1.1 user unknown" },
    });
    expect(await suppressionRows(p.id)).toHaveLength(1);
  });

  it("a transient Bounce (event publishing format) only records email.bounced", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p, { status: "DELIVERED" });
    const res = await post(await sign(notification(bounceOf(email, "Transient", "eventType"))));
    expect(res.status).toBe(200);
    expect(res.body.data.outcome).toBe("transient-bounce");
    const row = await getEmail(email.id);
    expect([row.status, row.bouncedAt]).toEqual(["DELIVERED", null]);
    expect(await suppressionRows(p.id)).toHaveLength(0);
    expect((await getContact(email.contactId!)).subscribed).toBe(true);
    const evs = await eventsOfEmail(email.id);
    expect(evs.map((e) => [e.name, e.data.bounceType])).toEqual([["email.bounced", "Transient"]]);
  });

  it("a Complaint after an open marks COMPLAINED, suppresses the address and unsubscribes the contact", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p, { status: "DELIVERED" });
    await recordEngagement(getDb(env.DB), email.id, "OPENED");
    const res = await post(await sign(notification(complaintOf(email, "eventType"))));
    expect(res.status).toBe(200);
    expect(res.body.data.outcome).toBe("complained");
    const row = await getEmail(email.id);
    expect(row.status).toBe("COMPLAINED");
    expect(row.complainedAt).toBeInstanceOf(Date);
    expect(row.opens).toBe(1);
    expect(await suppressionRows(p.id)).toMatchObject([{ email: email.to, reason: "COMPLAINT" }]);
    expect((await getContact(email.contactId!)).subscribed).toBe(false);
    const complained = (await p.api.get<EventList>("/events?name=email.complained")).body.data.items;
    expect(complained).toHaveLength(1);
    expect(complained[0]).toMatchObject({ contactId: email.contactId, emailId: email.id, data: { complaintFeedbackType: "abuse" } });

    // A late Delivery report does not undo the complaint.
    await post(await sign(notification(deliveryOf(email))));
    expect((await getEmail(email.id)).status).toBe("COMPLAINED");
  });

  it("acknowledges notifications for unknown emails and non-JSON/other SES messages without changing anything", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const before = await tableCounts();
    const res = await post(await sign(notification(deliveryOf({ providerMessageId: "not-ours", to: "x@example.com" }))));
    expect(res.status).toBe(200);
    expect(res.body.data.outcome).toBe("unknown-email");
    const text = await post(await sign(notification("ignored", { Message: "Successfully validated SNS topic for Amazon SES event publishing." })));
    expect(text.status).toBe(200);
    expect(text.body.data.outcome).toBe("ignored");
    const send = await post(await sign(notification({ eventType: "Send", mail: mail("whatever", "x@example.com"), send: {} })));
    expect(send.body.data.outcome).toBe("ignored");
    // A Send event for one of our emails is acknowledged too, and changes nothing either.
    const ours = await post(await sign(notification({ eventType: "Send", mail: mail(email.providerMessageId, email.to), send: {} })));
    expect(ours.body.data.outcome).toBe("ignored");
    expect(await tableCounts()).toEqual(before);
    expect(await getEmail(email.id)).toMatchObject({ status: "SENT", deliveredAt: null, bouncedAt: null, complainedAt: null });
  });

  it("accepts SignatureVersion 1 (SHA1withRSA) and 2 (SHA256withRSA), with and without Subject", async () => {
    const p = await newProject();
    const one = await insertSentEmail(p);
    const two = await insertSentEmail(p);
    expect((await post(await sign(notification(deliveryOf(one), { Subject: "Amazon SES Email Event Notification" }), { version: "1" }))).status).toBe(200);
    expect((await post(await sign(notification(deliveryOf(two)), { version: "2" }))).status).toBe(200);
    expect((await getEmail(one.id)).status).toBe("DELIVERED");
    expect((await getEmail(two.id)).status).toBe("DELIVERED");
    // The certificate was fetched once and its key kept for the next messages.
    expect(fetched.filter((u) => u === CERT_URL)).toHaveLength(1);
  });
});

describe("POST /webhooks/ses: subscription confirmation", () => {
  const confirmation = (subscribeUrl = SUBSCRIBE_URL): Sns => ({
    Type: "SubscriptionConfirmation",
    MessageId: crypto.randomUUID(),
    Token: "abc123",
    TopicArn: TOPIC,
    Message: `You have chosen to subscribe to the topic ${TOPIC}.\nTo confirm the subscription, visit the SubscribeURL included in this message.`,
    SubscribeURL: subscribeUrl,
    Timestamp: new Date().toISOString(),
  });

  it("fetches the SubscribeURL after verifying the message", async () => {
    const res = await post(await sign(confirmation()));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({ type: "SubscriptionConfirmation", outcome: "confirmed" });
    expect(fetched).toEqual([CERT_URL, SUBSCRIBE_URL]);
  });

  it("does not fetch a SubscribeURL that is not on an SNS host, nor one of a forged message", async () => {
    expectError(await post(await sign(confirmation("https://evil.example.com/?Action=ConfirmSubscription"))), 403, "FORBIDDEN");
    expect(fetched).toEqual([CERT_URL]);
    const forged = await sign(confirmation());
    forged.SubscribeURL = SUBSCRIBE_URL.replace("abc123", "other");
    expectError(await post(forged), 403, "FORBIDDEN");
    expect(fetched.some((u) => u.includes("ConfirmSubscription"))).toBe(false);
  });
});

describe("POST /webhooks/ses: forged and malformed messages", () => {
  it("a tampered Message is refused with 403 and nothing changes", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const genuine = await sign(notification(deliveryOf(email)));
    const forged = { ...genuine, Message: JSON.stringify(bounceOf(email, "Permanent")) };
    expectError(await post(forged), 403, "FORBIDDEN");
    // Other signed fields too.
    expectError(await post({ ...genuine, Timestamp: new Date(Date.now() - 1000).toISOString() }), 403);
    expectError(await post({ ...genuine, Subject: "added" }), 403);
    expectError(await post({ ...genuine, Signature: "AAAA" }), 403);
    expectError(await post({ ...genuine, Signature: "not base64 !!" }), 403);
    // Signed with SHA-1 but labelled version 2; unknown version.
    expectError(await post(await sign(notification(deliveryOf(email)), { version: "2", hash: "SHA-1" })), 403);
    expectError(await post({ ...genuine, SignatureVersion: "3" }), 403);

    const row = await getEmail(email.id);
    expect(row.status).toBe("SENT");
    expect(row.deliveredAt).toBeNull();
    expect(await eventsOfEmail(email.id)).toHaveLength(0);
    expect(await suppressionRows(p.id)).toHaveLength(0);
    expect((await getContact(email.contactId!)).subscribed).toBe(true);
  });

  it("rejects certificate URLs that are not https .pem URLs on an SNS host, without fetching anything", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const bad = [
      "https://evil.example.com/x.pem",
      "http://sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem",
      "https://sns.us-east-1.amazonaws.com.evil.com/x.pem",
      "https://evil.com/sns.us-east-1.amazonaws.com/x.pem",
      "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-test.txt",
      "https://sns.us-east-1.amazonaws.com:8443/SimpleNotificationService-test.pem",
      "https://user@sns.us-east-1.amazonaws.com/SimpleNotificationService-test.pem",
      "https://sns.us-east-1.amazonaws.com/x.pem?redirect=https://evil.com/x.pem",
      "https://xsns.us-east-1.amazonaws.com/x.pem",
      "not a url",
    ];
    for (const certUrl of bad) {
      const res = await post(await sign(notification(bounceOf(email, "Permanent")), { certUrl }));
      expectError(res, 403, "FORBIDDEN");
    }
    expect(fetched).toEqual([]);
    expect((await getEmail(email.id)).status).toBe("SENT");
    expect(await suppressionRows(p.id)).toHaveLength(0);
  });

  it("messages older than an hour are refused", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const old = await sign(notification(deliveryOf(email), { Timestamp: new Date(Date.now() - 2 * 3600_000).toISOString() }));
    expectError(await post(old), 403, "FORBIDDEN");
    expect((await getEmail(email.id)).status).toBe("SENT");
  });

  it("malformed bodies are 400, never 500", async () => {
    expectError(await post("{not json"), 400, "INVALID_JSON");
    expectError(await post("[]"), 400, "BAD_REQUEST");
    expectError(await post({ Type: "Notification" }), 400, "BAD_REQUEST");
    expectError(await post({ Type: "Whatever", MessageId: "x" }), 400, "BAD_REQUEST");
    const signed = await sign(notification({}));
    expectError(await post({ ...signed, Timestamp: "yesterday" }), 400, "BAD_REQUEST");
    expectError(await post({ ...signed, Message: 42 }), 400, "BAD_REQUEST");
  });

  it(`an unreachable certificate is a 503 (SNS retries), remembered for ${CERT_FAILURE_TTL_MS} ms only: the later retry succeeds`, async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const message = await sign(notification(deliveryOf(email)));
    const clock = { now: Date.now() };
    const app = createApp({ now: () => clock.now });
    certStatus = 500;
    expectError(await post(message, app.fetch), 503, "SERVICE_UNAVAILABLE");
    expect((await getEmail(email.id)).status).toBe("SENT");
    certStatus = 200;
    // Right away, and up to the TTL on the app's clock: the same answer without fetching again.
    expectError(await post(message, app.fetch), 503, "SERVICE_UNAVAILABLE");
    clock.now += CERT_FAILURE_TTL_MS;
    expectError(await post(message, app.fetch), 503, "SERVICE_UNAVAILABLE");
    expect(fetched).toEqual([CERT_URL]);
    clock.now += 1;
    expect((await post(message, app.fetch)).status).toBe(200);
    expect((await getEmail(email.id)).status).toBe("DELIVERED");
  });

  it(`a certificate URL that answers something other than a certificate is a 403, remembered for ${CERT_FAILURE_TTL_MS} ms only`, async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const message = await sign(notification(deliveryOf(email)));
    const clock = { now: Date.now() };
    const app = createApp({ now: () => clock.now });
    certBody = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    expectError(await post(message, app.fetch), 403, "FORBIDDEN");
    expect((await getEmail(email.id)).status).toBe("SENT");
    certBody = certPem;
    expectError(await post(message, app.fetch), 403, "FORBIDDEN");
    clock.now += CERT_FAILURE_TTL_MS + 1;
    expect((await post(message, app.fetch)).status).toBe(200);
    expect((await getEmail(email.id)).status).toBe("DELIVERED");
  });
});

describe("POST /webhooks/ses: SES_SNS_TOPIC_ARNS", () => {
  it("when set, refuses validly signed messages from other topics", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const app = createApp();
    const send = (m: Sns, topics: string) =>
      app.request(
        "/webhooks/ses",
        { method: "POST", body: JSON.stringify(m), headers: { "Content-Type": "text/plain" } },
        { ...env, SES_SNS_TOPIC_ARNS: topics },
      );
    const other = await sign(notification(bounceOf(email, "Permanent"), { TopicArn: "arn:aws:sns:us-east-1:999999999999:someone-else" }));
    const refused = await send(other, `${TOPIC}, arn:aws:sns:eu-west-1:123456789012:eu-feedback`);
    expect(refused.status).toBe(403);
    expect((await getEmail(email.id)).status).toBe("SENT");
    const ours = await send(await sign(notification(deliveryOf(email))), `${TOPIC}, arn:aws:sns:eu-west-1:123456789012:eu-feedback`);
    expect(ours.status).toBe(200);
    expect((await getEmail(email.id)).status).toBe("DELIVERED");
  });
});

describe("POST /webhooks/ses: trust", () => {
  const app = createApp();
  const send = (m: Sns, overrides: Record<string, string>) =>
    app.request("/webhooks/ses", { method: "POST", body: JSON.stringify(m), headers: { "Content-Type": "text/plain" } }, { ...env, ...overrides });

  it("refuses every message, fetching nothing, while SES_SNS_TOPIC_ARNS is not set", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const message = await sign(notification(bounceOf(email, "Permanent")));
    for (const topics of ["", " , "]) {
      const res = await send(message, { SES_SNS_TOPIC_ARNS: topics });
      expect(res.status).toBe(403);
      expect(((await res.json()) as any).error.message).toContain("SES_SNS_TOPIC_ARNS");
    }
    expect(fetched).toEqual([]);
    expect((await getEmail(email.id)).status).toBe("SENT");
    expect(await suppressionRows(p.id)).toHaveLength(0);
  });

  it("takes the signing certificate only from sns.<region>.amazonaws.com of the TopicArn's region", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const euTopic = "arn:aws:sns:eu-west-1:123456789012:ses-feedback";
    // Signed correctly, but its certificate lives on another region's SNS host.
    const message = await sign(notification(bounceOf(email, "Permanent"), { TopicArn: euTopic }));
    const res = await send(message, { SES_SNS_TOPIC_ARNS: `${TOPIC},${euTopic}` });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.message).toContain("region");
    expect(fetched).toEqual([]);
    expect((await getEmail(email.id)).status).toBe("SENT");
    // The same message from the us-east-1 topic, whose host the certificate is on, is accepted.
    const ours = await send(await sign(notification(deliveryOf(email))), { SES_SNS_TOPIC_ARNS: `${TOPIC},${euTopic}` });
    expect(ours.status).toBe(200);
  });

  it("refuses a SubscribeURL on another region's SNS host", async () => {
    const euTopic = "arn:aws:sns:eu-west-1:123456789012:ses-feedback";
    const confirmation = {
      Type: "SubscriptionConfirmation",
      MessageId: crypto.randomUUID(),
      TopicArn: TOPIC,
      Message: "You have chosen to subscribe",
      Timestamp: new Date().toISOString(),
      Token: "abc123",
      SubscribeURL: `https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=${encodeURIComponent(euTopic)}&Token=abc123`,
    };
    const res = await send(await sign(confirmation), { SES_SNS_TOPIC_ARNS: TOPIC });
    expect(res.status).toBe(403);
    expect(fetched).toEqual([CERT_URL]);
  });
});

describe("POST /webhooks/ses: clocks, unsubscribe confirmations and the China regions", () => {
  it("a message dated more than 5 minutes in the future is refused and changes nothing", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const before = await tableCounts();
    const future = await sign(notification(bounceOf(email, "Permanent"), { Timestamp: new Date(Date.now() + 6 * 60_000).toISOString() }));
    expectError(await post(future), 403, "FORBIDDEN");
    expect(await tableCounts()).toEqual(before);
    expect((await getEmail(email.id)).status).toBe("SENT");
  });

  it("a message dated 4 minutes ahead (clock skew) is accepted", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const skewed = await sign(notification(deliveryOf(email), { Timestamp: new Date(Date.now() + 4 * 60_000).toISOString() }));
    expect((await post(skewed)).status).toBe(200);
    expect((await getEmail(email.id)).status).toBe("DELIVERED");
  });

  it("an UnsubscribeConfirmation is verified, acknowledged and changes nothing; it never fetches its SubscribeURL", async () => {
    const p = await newProject();
    await insertSentEmail(p);
    const before = await tableCounts();
    const unsubscribed: Sns = {
      Type: "UnsubscribeConfirmation",
      MessageId: crypto.randomUUID(),
      Token: "tok-unsub",
      TopicArn: TOPIC,
      Message: `You have chosen to deactivate subscription to ${TOPIC}.`,
      SubscribeURL: SUBSCRIBE_URL,
      Timestamp: new Date().toISOString(),
    };
    const res = await post(await sign(unsubscribed));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({ type: "UnsubscribeConfirmation", outcome: "ignored" });
    expect(fetched).toEqual([CERT_URL]);
    expect(await tableCounts()).toEqual(before);

    // Forged: refused before anything is fetched beyond the certificate.
    const forged = { ...(await sign(unsubscribed)), Token: "other" };
    expectError(await post(forged), 403, "FORBIDDEN");
    expect(fetched.filter((u) => u !== CERT_URL)).toEqual([]);
  });

  it("accepts a China-partition topic's certificate on its .amazonaws.com.cn SNS host, and nothing that only looks like one", async () => {
    const p = await newProject();
    const email = await insertSentEmail(p);
    const cnTopic = "arn:aws-cn:sns:cn-north-1:123456789012:ses-feedback";
    const app = createApp();
    const send = async (m: Sns) => {
      const res = await app.request(
        "/webhooks/ses",
        { method: "POST", body: JSON.stringify(m), headers: { "Content-Type": "text/plain" } },
        { ...env, SES_SNS_TOPIC_ARNS: `${TOPIC},${cnTopic}` },
      );
      return { status: res.status, body: (await res.json()) as any };
    };
    const res = await send(await sign(notification(deliveryOf(email), { TopicArn: cnTopic }), { certUrl: CN_CERT_URL }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(fetched).toEqual([CN_CERT_URL]);
    expect((await getEmail(email.id)).status).toBe("DELIVERED");

    for (const certUrl of [
      "https://sns.cn-north-1.amazonaws.com.cn.evil.example/x.pem",
      "https://sns.cn-north-1.amazonaws.cn/x.pem",
      "https://sns.cn-north-1.amazonaws.com.com/x.pem",
      "http://sns.cn-north-1.amazonaws.com.cn/x.pem",
      "https://sns.cn-northwest-1.amazonaws.com.cn/x.pem",
    ]) {
      const refused = await send(await sign(notification(deliveryOf(email), { TopicArn: cnTopic }), { certUrl }));
      expect(refused.status, certUrl).toBe(403);
      expect(refused.body.error.code).toBe("FORBIDDEN");
    }
    expect(fetched).toEqual([CN_CERT_URL]);
  });
});

describe("X.509 SubjectPublicKeyInfo extraction", () => {
  it("finds the key of a v3 certificate (with the [0] version field)", async () => {
    const spki = spkiFromCertificate(pemToDer(certPem));
    const key = await crypto.subtle.importKey("spki", spki, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, true, ["verify"]);
    expect((key.algorithm as { modulusLength?: number }).modulusLength).toBe(2048);
  });

  it("throws on truncated or non-certificate DER", () => {
    const der = pemToDer(certPem);
    expect(() => spkiFromCertificate(der.slice(0, 40))).toThrow();
    expect(() => spkiFromCertificate(new Uint8Array([0x02, 0x01, 0x00]))).toThrow();
  });
});
