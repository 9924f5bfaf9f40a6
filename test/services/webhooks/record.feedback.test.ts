import { Webhook } from "standardwebhooks";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { clearSnsKeyCache } from "../../../src/outside/sns";
import { notification, sign, snsHandler } from "../../fakes/sns";
import { insertSentEmail } from "../../support/emails";
import { call } from "../../support/http";
import { receiver, recordedEvents, webhookProject } from "../../support/webhooks";
import { eventually } from "../../support/wait";
import type { SesFeedbackResponse } from "../../support/api";

beforeEach(() => clearSnsKeyCache());
afterEach(() => vi.restoreAllMocks());

const URL_ = "https://hooks.example.net/in";
const mail = (e: { providerMessageId: string; to: string }) => ({
  timestamp: new Date().toISOString(),
  messageId: e.providerMessageId,
  source: "news@sender.example",
  destination: [e.to],
});
const post = async (ses: unknown) =>
  call<SesFeedbackResponse>("POST", "/webhooks/ses", {
    rawBody: JSON.stringify(await sign(notification(ses))),
    headers: { "Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
  });

describe("feedback events (SES through SNS)", () => {
  it("delivered, bounced (HARD / SOFT), complained, delivery_delayed, and the contacts they unsubscribe; once each", async () => {
    const { calls } = receiver();
    // The SNS signing certificate is part of the outside world too.
    const original = vi.mocked(globalThis.fetch).getMockImplementation()!;
    vi.mocked(globalThis.fetch).mockImplementation(async (input, init) => {
      const request = input instanceof Request ? input : new Request(String(input), init);
      return snsHandler(request) ?? original(input, init);
    });
    const p = await webhookProject();
    const hook = await p.createWebhook({ url: URL_ });
    const delivered = await insertSentEmail(p);
    const bounced = await insertSentEmail(p);
    const complained = await insertSentEmail(p);
    const soft = await insertSentEmail(p);

    const delivery = { notificationType: "Delivery", mail: mail(delivered), delivery: { timestamp: "2026-07-01T10:00:00.000Z", recipients: [delivered.to] } };
    expect((await post(delivery)).body.data.outcome).toBe("delivered");
    expect((await post(delivery)).body.data.outcome).toBe("delivered");
    const bounce = (e: typeof bounced, bounceType: string) => ({
      notificationType: "Bounce",
      mail: mail(e),
      bounce: {
        bounceType,
        bouncedRecipients: [{ emailAddress: e.to, diagnosticCode: "smtp; 550 user unknown" }],
        timestamp: new Date().toISOString(),
        feedbackId: `fb-${crypto.randomUUID()}`,
      },
    });
    expect((await post(bounce(bounced, "Permanent"))).body.data.outcome).toBe("bounced");
    expect((await post(bounce(bounced, "Permanent"))).body.data.outcome).toBe("bounced");
    expect((await post(bounce(soft, "Transient"))).body.data.outcome).toBe("transient-bounce");
    const complaint = {
      notificationType: "Complaint",
      mail: mail(complained),
      complaint: { complainedRecipients: [{ emailAddress: complained.to }], timestamp: new Date().toISOString(), feedbackId: "fb-c" },
    };
    expect((await post(complaint)).body.data.outcome).toBe("complained");
    const delay = { eventType: "DeliveryDelay", mail: mail(soft), deliveryDelay: { delayType: "MailboxFull", timestamp: new Date().toISOString() } };
    expect((await post(delay)).body.data.outcome).toBe("delayed");

    const events = await eventually(async () => {
      const list = calls.filter((c) => c.url === URL_).map((c) => new Webhook(hook.secret).verify(c.body, c.headers) as { type: string; data: any });
      expect(list).toHaveLength(9);
      return list;
    });
    const of = (type: string) => events.filter((e) => e.type === type).map((e) => e.data);
    expect(of("email.delivered")).toMatchObject([{ emailId: delivered.id, to: delivered.to, contactId: delivered.contactId }]);
    expect(of("email.bounced")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ emailId: bounced.id, bounceType: "HARD" }),
        expect.objectContaining({ emailId: soft.id, bounceType: "SOFT" }),
      ]),
    );
    expect(of("email.bounced")).toHaveLength(2);
    expect(of("email.complained")).toMatchObject([{ emailId: complained.id }]);
    expect(of("email.delivery_delayed")).toMatchObject([{ emailId: soft.id, delayType: "MailboxFull" }]);
    expect(
      of("contact.unsubscribed")
        .map((c) => c.id)
        .sort(),
    ).toEqual([bounced.contactId, complained.contactId].sort());
    expect(of("contact.unsubscribed").every((c) => c.subscribed === false)).toBe(true);
    // The hard bounce and the complaint put the address on the suppression list for every stream: once each.
    expect(
      of("suppression.created")
        .map((d) => [d.email, d.reason, d.stream])
        .sort(),
    ).toEqual(
      [
        [bounced.to, "BOUNCE", "ALL"],
        [complained.to, "COMPLAINT", "ALL"],
      ].sort(),
    );
    // Nothing else was recorded, so nothing else will be sent.
    expect(await recordedEvents(p.id)).toHaveLength(9);
  });
});
