import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sendingSetup } from "../../support/sending";
import { recordedEvents } from "../../support/webhooks";
import { eventually } from "../../support/wait";
import type { WebhookWithSecret } from "../../support/api";

afterEach(() => vi.restoreAllMocks());

const URL_ = "https://hooks.example.net/in";

/** A sending setup whose outside world also has a webhook receiver at hooks.example.net. */
async function setup() {
  const s = await sendingSetup();
  const calls: { body: string; headers: Record<string, string> }[] = [];
  s.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
  s.serve(async (request) => {
    if (!request.url.startsWith(URL_)) return undefined;
    calls.push({ body: await request.text(), headers: Object.fromEntries(request.headers) });
    return new Response("ok");
  });
  const hook = await s.post<WebhookWithSecret>("/webhooks", { url: URL_, events: ["email.sent", "email.failed", "email.suppressed"] });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  const events = () => calls.map((c) => new Webhook(hook.body.secret).verify(c.body, c.headers) as { type: string; data: any });
  return { ...s, calls, events };
}

describe("email events from the send consumer", () => {
  it("email.sent when the provider took it, once, with the email's fields; email.failed with the reason", async () => {
    const s = await setup();
    const sent = await s.send({ to: "ann@example.org", from: s.from, subject: "Hello", body: "<p>hi</p>" });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const emailId = sent.body.data.emails[0].email;
    const messages = s.queue.take().map((m) => m.body);
    await s.deliver(messages);
    // A redelivered message changes nothing and records nothing twice.
    await s.deliver(messages);
    const [event] = await eventually(async () => {
      const list = s.events();
      expect(list).toHaveLength(1);
      return list;
    });
    expect(event).toEqual({
      type: "email.sent",
      timestamp: expect.any(String),
      data: {
        emailId,
        contactId: sent.body.data.emails[0].contact.id,
        to: "ann@example.org",
        from: s.from,
        subject: "Hello",
        campaignId: null,
        templateId: null,
        workflowId: null,
      },
    });

    s.ses.failNext({ status: 400, errorType: "MessageRejected", message: "Email address is not verified." });
    const failed = await s.send({ to: "bob@example.org", from: s.from, subject: "Nope", body: "<p>x</p>" });
    await s.deliver(s.queue.take().map((m) => m.body));
    await eventually(async () => expect(s.events()).toHaveLength(2));
    const failure = s.events()[1];
    expect(failure).toMatchObject({ type: "email.failed", data: { emailId: failed.body.data.emails[0].email, to: "bob@example.org" } });
    expect(failure.data.reason).toContain("not verified");
    // The redelivery recorded nothing, so nothing else will be sent.
    expect(await recordedEvents(s.project.id)).toEqual(["email.sent", "email.failed"]);
  });
});
