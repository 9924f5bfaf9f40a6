import { afterEach, describe, expect, it, vi } from "vitest";
import { clearSnsKeyCache } from "../../../src/outside/sns";
import { notification, sesBounce, sign, snsHandler } from "../../fakes/sns";
import { call } from "../../support/http";
import { sendingSetup } from "../../support/sending";
import type { Contact, Email, EventList, SesFeedbackResponse, Template, UpsertedContact } from "../../support/api";

afterEach(() => vi.restoreAllMocks());

const decodeAttribute = (value: string) => value.replace(/&amp;/g, "&");

describe("the feedback loop, end to end", () => {
  it("send -> consumer -> SES MessageId -> links followed from the MIME -> SNS bounce -> suppression -> the next send reports it", async () => {
    clearSnsKeyCache();
    const s = await sendingSetup({ SES_CONFIGURATION_SET: "feedback" });
    s.serve(snsHandler);
    const api = s.project.api;

    // A subscribed contact and a marketing template with a link and an unsubscribe link.
    const contact = await api.post<UpsertedContact>("/contacts", { email: "ada@example.com", subscribed: true, data: { firstName: "Ada" } });
    expect(contact.status).toBe(201);
    const template = await api.post<Template>("/templates", {
      name: "News",
      subject: "News for {{firstName}}",
      body: '<p>Hi {{firstName}}, read <a href="https://docs.example/news?id=7&amp;ref=mail">the news</a>.</p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>',
      type: "MARKETING",
      from: s.from,
    });
    expect(template.status).toBe(201);

    // 1. Accepted and queued.
    const sent = await s.send({ to: "ada@example.com", template: template.body.id });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const emailId = sent.body.data.emails[0].email;
    expect(sent.body.data.suppressed).toEqual([]);

    // 2. The consumer hands it to (fake) SES, which answers a MessageId.
    const delivered = await s.deliver();
    expect(delivered.explicitAcks).toHaveLength(1);
    expect(s.ses.calls).toHaveLength(1);
    const sesMessageId = s.ses.calls[0].messageId;
    const email = await s.get(`/emails/${emailId}`);
    expect(email.body).toMatchObject({ status: "SENT", providerMessageId: sesMessageId, subject: "News for Ada" });

    // 3. Links as the recipient's mail client sees them, taken from the delivered MIME.
    const { headers, parts } = s.ses.calls[0].mime;
    const html = parts.find((p) => p.contentType.startsWith("text/html"))!.text;
    const hrefs = [...html.matchAll(/href="([^"]+)"/g)].map((m) => decodeAttribute(m[1]));
    const click = hrefs.find((h) => h.includes("/t/c/"))!;
    const pixel = decodeAttribute(/<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1]);
    const unsubscribeLink = hrefs.find((h) => h.includes("/unsubscribe/"))!;
    const listUnsubscribe = /^<([^>]+)>/.exec(headers["list-unsubscribe"])![1];
    expect(headers["list-unsubscribe-post"]).toBe("List-Unsubscribe=One-Click");
    expect(unsubscribeLink).toBe(listUnsubscribe);

    const path = (url: string) => {
      const u = new URL(url);
      expect(u.origin).toBe("http://edge-mail.test");
      return u.pathname + u.search;
    };
    const opened = await call("GET", path(pixel));
    expect(opened.status).toBe(200);
    expect(opened.headers.get("content-type")).toMatch(/^image\//);
    // As a browser's first request: the redirect itself, not where it leads.
    const clicked = await call("GET", click, { redirect: "manual" });
    expect(clicked.status).toBe(302);
    expect(clicked.headers.get("location")).toBe("https://docs.example/news?id=7&ref=mail");
    expect((await s.get(`/emails/${emailId}`)).body).toMatchObject({ opens: 1, clicks: 1 });

    // The unsubscribe page (GET) only asks; the one-click POST (RFC 8058) acts.
    const page = await call("GET", path(unsubscribeLink));
    expect(page.status).toBe(200);
    expect((await api.get<Contact>(`/contacts/${contact.body.id}`)).body.subscribed).toBe(true);
    const unsubscribed = await call("POST", path(listUnsubscribe), {
      rawBody: "List-Unsubscribe=One-Click",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(unsubscribed.status).toBe(200);
    expect((await api.get<Contact>(`/contacts/${contact.body.id}`)).body.subscribed).toBe(false);

    // 4. SES reports a permanent bounce for that MessageId through SNS.
    const bounce = await call<SesFeedbackResponse>("POST", "/webhooks/ses", {
      rawBody: JSON.stringify(await sign(notification(sesBounce(sesMessageId, "ada@example.com")))),
      headers: { "Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
    });
    expect(bounce.status, JSON.stringify(bounce.body)).toBe(200);
    expect(bounce.body.data.outcome).toBe("bounced");
    expect((await s.get<Email>(`/emails/${emailId}`)).body.status).toBe("BOUNCED");
    const events = await api.get<EventList>("/events?name=email.bounced");
    expect(events.body.data.items.map((e) => e.emailId)).toEqual([emailId]);

    // 5. The next send reports the address as suppressed and queues nothing for it.
    s.queue.take();
    const next = await s.send({ to: ["ada@example.com", "bob@example.com"], from: s.from, subject: "Again", body: "<p>again</p>" });
    expect(next.status).toBe(200);
    expect(next.body.data.suppressed).toEqual([{ email: "ada@example.com", reason: "BOUNCE", stream: "ALL", gate: "SUPPRESSED" }]);
    expect(next.body.data.emails.map((e: { contact: { email: string } }) => e.contact.email)).toEqual(["bob@example.com"]);
    expect(s.queue.messages).toHaveLength(1);
  });
});
