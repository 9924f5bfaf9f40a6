import { describe, expect, it } from "vitest";
import { fakeEmailService, type Builder } from "../../fakes/email-service";
import { sendingSetup } from "../../support/sending";
import { domainRecordConfig, expectedRecords } from "../../../src/services/domains/records";
import type { Email, Template } from "../../support/api";

/**
 * EMAIL_PROVIDER=cloudflare: the real queue consumer and D1 against a fake
 * `send_email` binding (test/fake-email-service.ts) passed in as env.EMAIL.
 * PUBLIC_URL is https here because the Email Service refuses http
 * List-Unsubscribe links.
 */
async function cloudflareSetup(service = fakeEmailService()) {
  const s = await sendingSetup({ EMAIL_PROVIDER: "cloudflare", EMAIL: service.binding, PUBLIC_URL: "https://mail.edge-mail.test" });
  return { ...s, service };
}

type Setup = Awaited<ReturnType<typeof cloudflareSetup>>;

async function sendOne(s: Setup, over: object = {}) {
  const res = await s.send({ to: "ada@example.com", from: s.from, subject: "Hello", body: '<p>Hi <a href="https://example.com/x">link</a></p>', ...over });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.emails[0].email as string;
}

const status = async (s: Setup, id: string) => (await s.get<Email>(`/emails/${id}`)).body;

describe("the fake binding refuses what the Email Service refuses", () => {
  const ok: Builder = { from: "hello@example.com", to: "ada@example.net", subject: "Hi", text: "hi" };
  const codeOf = async (p: Promise<unknown>) =>
    p.then(
      () => "accepted",
      (err: { code?: string; message: string }) => err.code ?? err.message,
    );

  it("missing subject, 51 recipients, a sender outside the allowed list, platform headers", async () => {
    const service = fakeEmailService({ allowedSenderAddresses: ["hello@example.com"] });
    const send = (over: Partial<Builder>) => codeOf(service.binding.send({ ...ok, ...over } as never));
    expect(await send({})).toBe("accepted");
    expect(await send({ subject: "" })).toBe("E_FIELD_MISSING");
    expect(await send({ subject: undefined })).toBe("E_FIELD_MISSING");
    const many = Array.from({ length: 51 }, (_, i) => `r${i}@example.net`);
    expect(await send({ to: many })).toBe("E_TOO_MANY_RECIPIENTS");
    expect(await send({ to: many.slice(0, 40), cc: many.slice(40, 50) })).toBe("accepted");
    expect(await send({ to: many.slice(0, 40), bcc: many.slice(40) })).toBe("E_TOO_MANY_RECIPIENTS");
    expect(await send({ from: "other@example.com" })).toBe("email from other@example.com not allowed");
    expect(await send({ headers: { "Message-ID": "<x@y>" } })).toBe("E_HEADER_NOT_ALLOWED");
    expect(await send({ headers: { Subject: "x" } })).toBe("E_HEADER_USE_API_FIELD");
    expect(await send({ headers: { "List-Unsubscribe": "<http://example.com/u>" } })).toBe("E_HEADER_VALUE_INVALID");
    expect(service.sent).toHaveLength(2);
  });
});

describe("EMAIL_PROVIDER=cloudflare", () => {
  it("sends the structured message: names, reply-to, tracked HTML, text, custom X- headers, attachment bytes; SENT with the binding's message id", async () => {
    const s = await cloudflareSetup();
    const pdf = btoa("%PDF-1.4 fake");
    const id = await sendOne(s, {
      to: { name: "Ada Lovelace", email: "ada@example.com" },
      name: "Edge Team",
      reply: "support@example.com",
      headers: { "X-Campaign": "spring" },
      attachments: [{ filename: "a.pdf", content: pdf, contentType: "application/pdf" }],
    });
    const result = await s.deliver();
    expect(result.explicitAcks).toHaveLength(1);
    expect(s.service.sent).toHaveLength(1);
    const sent = s.service.sent[0];
    expect(sent.from).toEqual({ email: s.from, name: "Edge Team" });
    expect(sent.to).toEqual({ email: "ada@example.com", name: "Ada Lovelace" });
    expect(sent.replyTo).toBe("support@example.com");
    expect(sent.subject).toBe("Hello");
    expect(sent.headers).toEqual({ "X-Campaign": "spring" });
    expect(sent.html).toMatch(new RegExp(`href="https://mail\\.edge-mail\\.test/t/c/${id}\\?u=https%3A%2F%2Fexample\\.com%2Fx&(amp;)?s=[^"]+"`));
    expect(sent.html).toContain(`<img src="https://mail.edge-mail.test/t/o/${id}?s=`);
    expect(sent.text).toContain("Hi link");
    expect(sent.attachments).toHaveLength(1);
    const attachment = sent.attachments![0];
    expect(attachment).toMatchObject({ filename: "a.pdf", type: "application/pdf", disposition: "attachment" });
    expect(new TextDecoder().decode(attachment.content as Uint8Array)).toBe("%PDF-1.4 fake");

    expect(await status(s, id)).toMatchObject({ status: "SENT", providerMessageId: sent.messageId.slice(1, -1), attempts: 1, error: null });
  });

  it("carries transactional mail only: a MARKETING template's send (broadcast mail) is refused, 409 naming the stream, nothing sent", async () => {
    const s = await cloudflareSetup();
    const template = await s.project.api.post<Template>("/templates", { name: "News", subject: "News", body: "<p>n</p>", type: "MARKETING", from: s.from });
    await s.project.api.post("/contacts", { email: "fan@example.com", subscribed: true });
    const res = await s.send({ to: "fan@example.com", template: template.body.id });
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expect((res.body as unknown as { error: { errors: { code: string }[] } }).error.errors[0].code).toBe("broadcast_unavailable");
    await s.deliver();
    expect(s.service.sent).toHaveLength(0);
    // (test/outside/providers/routing.test.ts: with EMAIL_PROVIDER_BROADCAST=ses the same send goes through SES.)
  });

  it("a sender outside the binding's allowed list is FAILED with the reason, acked, not retried", async () => {
    const s = await cloudflareSetup(fakeEmailService({ allowedSenderAddresses: ["someone-else@example.org"] }));
    const id = await sendOne(s);
    const result = await s.deliver();
    expect(result.explicitAcks).toHaveLength(1);
    expect(result.retryMessages).toHaveLength(0);
    expect(await status(s, id)).toMatchObject({ status: "FAILED", error: expect.stringContaining(`email from ${s.from} not allowed`) });
  });

  it("rejections with a code are FAILED with the code and message (unverified sender, header not allowed)", async () => {
    const s = await cloudflareSetup();
    const id = await sendOne(s);
    s.service.failNext({ code: "E_SENDER_NOT_VERIFIED", message: "Sender domain not verified" });
    const first = await s.deliver();
    expect(first.retryMessages).toHaveLength(0);
    expect(await status(s, id)).toMatchObject({
      status: "FAILED",
      error: "Cloudflare Email Service: E_SENDER_NOT_VERIFIED: Sender domain not verified",
    });

    // Our API accepts any custom header name; the Email Service only its allow-list and X- headers.
    const id2 = await sendOne(s, { headers: { "Foo-Bar": "1" } });
    await s.deliver();
    expect(await status(s, id2)).toMatchObject({ status: "FAILED", error: expect.stringContaining("E_HEADER_NOT_ALLOWED") });
    expect(s.service.sent).toHaveLength(0);
  });

  it("throttling, the daily limit and internal errors are retried with back-off, then SENT once", async () => {
    const s = await cloudflareSetup();
    const id = await sendOne(s);
    const [message] = s.queue.take();
    s.service.failNext(
      { code: "E_RATE_LIMIT_EXCEEDED", message: "Rate limit exceeded" },
      { code: "E_DAILY_LIMIT_EXCEEDED", message: "Daily limit exceeded" },
      { code: "E_INTERNAL_SERVER_ERROR", message: "Internal error" },
    );
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const result = await s.deliver([message.body], attempt);
      expect(result.retryMessages).toHaveLength(1);
      delays.push(result.retryDelays[0]!);
      expect((await status(s, id)).status).toBe("QUEUED");
    }
    expect(delays[0]).toBeGreaterThanOrEqual(5);
    expect(delays[2]).toBeGreaterThan(delays[0]);
    expect((await status(s, id)).error).toContain("E_INTERNAL_SERVER_ERROR");

    const last = await s.deliver([message.body], 4);
    expect(last.explicitAcks).toHaveLength(1);
    expect(s.service.calls.map((c: { code: string }) => c.code)).toEqual(["E_RATE_LIMIT_EXCEEDED", "E_DAILY_LIMIT_EXCEEDED", "E_INTERNAL_SERVER_ERROR", "ok"]);
    expect(await status(s, id)).toMatchObject({ status: "SENT", attempts: 4, error: null });
  });

  it("a dropped binding call without a code is an unknown outcome (the service may have the message): FAILED, never retried", async () => {
    const s = await cloudflareSetup();
    const id = await sendOne(s);
    s.service.failNext({ message: "Network connection lost." });
    const result = await s.deliver();
    expect(result.retryMessages).toHaveLength(0);
    expect(await status(s, id)).toMatchObject({
      status: "FAILED",
      error: expect.stringMatching(/^Outcome unknown: Cloudflare Email Service gave no answer: Network connection lost\./),
    });
  });

  it("without the EMAIL binding the mail is kept QUEUED with an error naming the binding, and retried", async () => {
    const s = await sendingSetup({ EMAIL_PROVIDER: "cloudflare", EMAIL: undefined });
    const id = await sendOne(s as unknown as Setup);
    const result = await s.deliver();
    expect(result.retryMessages).toHaveLength(1);
    expect(await status(s as unknown as Setup, id)).toMatchObject({ status: "QUEUED", error: expect.stringContaining("send_email binding named EMAIL") });
  });
});

describe("sending-domain records with EMAIL_PROVIDER=cloudflare", () => {
  it("check for what Cloudflare publishes on onboarding: SPF include:_spf.mx.cloudflare.net, cf-bounce MX and SPF", () => {
    const records = expectedRecords(domainRecordConfig({ EMAIL_PROVIDER: "cloudflare" }), "example.com", "s1", "MIIB");
    const byPurpose = Object.fromEntries(records.map((r) => [r.purpose, r]));
    expect(byPurpose.SPF).toMatchObject({ name: "example.com", value: "v=spf1 include:_spf.mx.cloudflare.net ~all", required: true });
    expect(byPurpose.RETURN_PATH_MX).toMatchObject({ name: "cf-bounce.example.com", value: "route1.mx.cloudflare.net", required: false });
    expect(byPurpose.RETURN_PATH_SPF).toMatchObject({ name: "cf-bounce.example.com", value: "v=spf1 include:_spf.mx.cloudflare.net ~all" });
    // SES keeps its records.
    const ses = expectedRecords(domainRecordConfig({ SES_REGION: "eu-west-1" }), "example.com", "s1", "MIIB");
    expect(ses.find((r) => r.purpose === "RETURN_PATH_MX")).toMatchObject({ name: "mail.example.com", value: "feedback-smtp.eu-west-1.amazonses.com" });
  });
});
