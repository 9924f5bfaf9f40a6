/**
 * Reply tracking on the sending side: with replies tracked an email's Reply-To is its signed reply
 * address on INBOUND_DOMAIN (r+<token>@), which names that email. The project's default never
 * replaces a Reply-To the mail has; a send's `trackReplies: true` does, false keeps it as given.
 * What the recipient's mail carries (SES raw MIME, the Cloudflare binding's fields) is what is checked.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { readReplyAddress } from "../../../src/services/inbound/reply-token";
import { fakeEmailService } from "../../fakes/email-service";
import { campaignSetup } from "../../support/campaigns";
import { sendingSetup } from "../../support/sending";
import type { CreatedWorkflow, Email, Template } from "../../support/api";
import { workflowExecutions } from "../../../src/db/schema";
import { newId } from "../../../src/lib/ids";
import { sendWorkflowEmail } from "../../../src/services/workflows/send-email";

const DOMAIN = "in.edge-mail.test";
const SECRET = env.LINK_SIGNING_SECRET as string;

type Setup = Awaited<ReturnType<typeof sendingSetup>>;

/** The address of a Reply-To header (`<addr>` or bare), or null without one. */
const addressOf = (header: string | undefined) => (header === undefined ? null : (/<([^>]+)>/.exec(header)?.[1] ?? header.trim()));

/** Sends one email, delivers it, and returns its id and the Reply-To address the provider got (null: none). */
async function sentReplyTo(s: Setup, over: object = {}): Promise<{ id: string; replyTo: string | null }> {
  const before = s.ses.calls.length;
  const res = await s.send({ to: "ada@example.com", from: s.from, subject: "Hello", body: "<p>Hi</p>", ...over });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await s.deliver();
  expect(s.ses.calls).toHaveLength(before + 1);
  return { id: res.body.data.emails[0].email, replyTo: addressOf(s.ses.calls[before].mime.headers["reply-to"]) };
}

const trackReplies = (s: Setup, on: boolean) => s.request("PATCH", "/project", { inbound: { trackReplies: on } });

describe("reply tracking: the Reply-To of the mail sent", () => {
  it("off by default: no Reply-To unless the send gives one", async () => {
    const s = await sendingSetup();
    expect((await sentReplyTo(s)).replyTo).toBeNull();
    expect((await sentReplyTo(s, { reply: "desk@example.com" })).replyTo).toBe("desk@example.com");
  });

  it("project on: each email's Reply-To is its own reply address, which maps back to the email id", async () => {
    const s = await sendingSetup();
    expect((await trackReplies(s, true)).status).toBe(200);
    const first = await sentReplyTo(s);
    const second = await sentReplyTo(s);
    expect(first.replyTo).toMatch(/^r\+[0-9a-f]{52}@in\.edge-mail\.test$/);
    expect(await readReplyAddress(SECRET, DOMAIN, first.replyTo!)).toBe(first.id);
    expect(await readReplyAddress(SECRET, DOMAIN, second.replyTo!)).toBe(second.id);
    expect(second.replyTo).not.toBe(first.replyTo);
    // A forged signature names nothing.
    expect(
      await readReplyAddress(
        SECRET,
        DOMAIN,
        first.replyTo!.replace(/[0-9a-f]@/, (c) => (c[0] === "0" ? "1@" : "0@")),
      ),
    ).toBeNull();
  });

  it("a send's trackReplies false keeps the mail as given, the project's default notwithstanding", async () => {
    const s = await sendingSetup();
    await trackReplies(s, true);
    expect((await sentReplyTo(s, { trackReplies: false })).replyTo).toBeNull();
    expect((await sentReplyTo(s, { trackReplies: false, reply: "desk@example.com" })).replyTo).toBe("desk@example.com");
  });

  it("the project's default never replaces an explicit Reply-To (the send's reply, a template's); a send's trackReplies true does", async () => {
    const s = await sendingSetup();
    await trackReplies(s, true);
    expect((await sentReplyTo(s, { reply: "desk@example.com" })).replyTo).toBe("desk@example.com");

    const template = await s.request<{ id: string }>("POST", "/templates", {
      name: "Receipt",
      subject: "Receipt",
      body: "<p>Thanks</p>",
      from: s.from,
      replyTo: "billing@example.com",
      type: "TRANSACTIONAL",
    });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    const fromTemplate = { template: template.body.id, subject: undefined, body: undefined };
    expect((await sentReplyTo(s, fromTemplate)).replyTo).toBe("billing@example.com");

    const asked = await sentReplyTo(s, { ...fromTemplate, trackReplies: true });
    expect(await readReplyAddress(SECRET, DOMAIN, asked.replyTo!)).toBe(asked.id);
    const askedOverReply = await sentReplyTo(s, { reply: "desk@example.com", trackReplies: true });
    expect(await readReplyAddress(SECRET, DOMAIN, askedOverReply.replyTo!)).toBe(askedOverReply.id);
  });

  it("project off, a send's trackReplies true: that send only", async () => {
    const s = await sendingSetup();
    const asked = await sentReplyTo(s, { trackReplies: true });
    expect(await readReplyAddress(SECRET, DOMAIN, asked.replyTo!)).toBe(asked.id);
    expect((await sentReplyTo(s)).replyTo).toBeNull();
    // The email record keeps the send's own Reply-To (none); the reply address is chosen when it is delivered.
    const email = await s.get<Email>(`/emails/${asked.id}`);
    expect(email.body.replyTo).toBeNull();
  });

  it("the choice is the project's when the mail is delivered: turned on after the send was accepted, the mail carries it", async () => {
    const s = await sendingSetup();
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "Hello", body: "<p>Hi</p>" });
    await trackReplies(s, true);
    await s.deliver();
    const replyTo = addressOf(s.ses.calls.at(-1)!.mime.headers["reply-to"]);
    expect(await readReplyAddress(SECRET, DOMAIN, replyTo!)).toBe(res.body.data.emails[0].email);
  });

  it("EMAIL_PROVIDER=cloudflare: the binding gets the reply address as replyTo", async () => {
    const service = fakeEmailService();
    const s = await sendingSetup({ EMAIL_PROVIDER: "cloudflare", EMAIL: service.binding, PUBLIC_URL: "https://mail.edge-mail.test" });
    await trackReplies(s, true);
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "Hello", body: "<p>Hi</p>" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await s.deliver();
    expect(service.sent).toHaveLength(1);
    expect(await readReplyAddress(SECRET, DOMAIN, String(service.sent[0].replyTo))).toBe(res.body.data.emails[0].email);

    // An explicit Reply-To stays, unless the send asked.
    await s.send({ to: "bob@example.com", from: s.from, subject: "Hello", body: "<p>Hi</p>", reply: "desk@example.com" });
    const asked = await s.send({ to: "eve@example.com", from: s.from, subject: "Hello", body: "<p>Hi</p>", reply: "desk@example.com", trackReplies: true });
    await s.deliver();
    expect(service.sent[1].replyTo).toBe("desk@example.com");
    expect(await readReplyAddress(SECRET, DOMAIN, String(service.sent[2].replyTo))).toBe(asked.body.data.emails[0].email);
  });

  it("without INBOUND_DOMAIN at delivery nothing is replaced, even for a project that tracks replies", async () => {
    const s = await sendingSetup();
    await trackReplies(s, true);
    const res = await s.send({ to: "ada@example.com", from: s.from, subject: "Hello", body: "<p>Hi</p>" });
    expect(res.status).toBe(200);
    const { runConsumer } = await import("../../support/queues");
    const { SEND_QUEUE } = await import("../../../src/messages");
    await runConsumer(
      SEND_QUEUE,
      { ...s.env, INBOUND_DOMAIN: undefined } as typeof s.env,
      s.queue.take().map((m) => ({ body: m.body })),
      { attempts: 1 },
    );
    expect(s.ses.calls.at(-1)!.mime.headers["reply-to"]).toBeUndefined();
  });
});

describe("reply tracking on the other paths that send", () => {
  it("a campaign's mail and its test send carry each email's reply address when the project tracks replies; a campaign's own replyTo stays", async () => {
    const s = await campaignSetup();
    await s.request("PATCH", "/project", { inbound: { trackReplies: true } });
    await s.addContacts([{ email: "grace@example.com" }, { email: "alan@example.com" }]);
    const campaign = await s.createCampaign();
    expect((await s.request("POST", `/campaigns/${campaign.id}/send`)).status).toBe(200);
    await s.pump();
    expect(s.ses.calls).toHaveLength(2);
    for (const sent of s.ses.calls) {
      const emailId = await readReplyAddress(SECRET, DOMAIN, addressOf(sent.mime.headers["reply-to"])!);
      expect(emailId).not.toBeNull();
      const email = await s.request<Email>("GET", `/emails/${emailId}`);
      expect(email.body.to).toBe(sent.to[0]);
    }

    const test = await s.request<{ data: { email: string } }>("POST", `/campaigns/${campaign.id}/test`, { email: "reviewer@example.com" });
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    await s.pump();
    expect(await readReplyAddress(SECRET, DOMAIN, addressOf(s.ses.calls.at(-1)!.mime.headers["reply-to"])!)).toBe(test.body.data.email);

    const own = await s.createCampaign({ name: "With a reply-to", replyTo: "news-desk@example.com" });
    expect((await s.request("POST", `/campaigns/${own.id}/send`)).status).toBe(200);
    await s.pump();
    const ownCalls = s.ses.calls.slice(-2);
    expect(ownCalls.map((c) => addressOf(c.mime.headers["reply-to"]))).toEqual(["news-desk@example.com", "news-desk@example.com"]);
  });

  it("a workflow SEND_EMAIL step's mail follows the project too; its template's replyTo stays", async () => {
    const s = await campaignSetup();
    await s.request("PATCH", "/project", { inbound: { trackReplies: true } });
    const template = async (replyTo?: string) => {
      const res = await s.request<Template>("POST", "/templates", {
        name: `Welcome ${replyTo ?? ""}`,
        subject: "Welcome",
        body: "<p>Hi</p>",
        type: "TRANSACTIONAL",
        from: s.from,
        ...(replyTo ? { replyTo } : {}),
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.id as string;
    };
    const plain = await template();
    const withReply = await template("team@example.com");
    const workflow = await s.request<CreatedWorkflow>("POST", "/workflows", {
      name: "welcome",
      enabled: false,
      trigger: { type: "EVENT", eventName: "never" },
      steps: [
        { id: "plain", type: "SEND_EMAIL", config: { templateId: plain }, next: "reply" },
        { id: "reply", type: "SEND_EMAIL", config: { templateId: withReply } },
      ],
    });
    expect(workflow.status, JSON.stringify(workflow.body)).toBe(201);
    // A running execution of it (what the Workflows engine would hold), then its two steps' bodies.
    const [contact] = await s.addContacts([{ email: "ada@example.org" }]);
    const executionId = newId();
    await s.db.insert(workflowExecutions).values({
      id: executionId,
      projectId: s.project.id,
      workflowId: workflow.body.id,
      workflowVersion: 1,
      contactId: contact.id,
      triggerKey: `test:${executionId}`,
      status: "RUNNING",
      history: [],
      startedAt: new Date(),
    });
    const step = (stepId: string, templateId: string) =>
      sendWorkflowEmail(s.db, s.env, { projectId: s.project.id, executionId, stepId, contactId: contact.id, templateId }) as Promise<{ emailId: string }>;
    const first = await step("plain", plain);
    const second = await step("reply", withReply);
    await s.pump();
    expect(s.ses.calls).toHaveLength(2);
    const replyTos = s.ses.calls.map((c) => addressOf(c.mime.headers["reply-to"])!);
    expect(await readReplyAddress(SECRET, DOMAIN, replyTos[0])).toBe(first.emailId);
    expect(replyTos[1]).toBe("team@example.com");
    expect(second.emailId).toBeTruthy();
  });

  it("a project on another data shard: its setting and its emails' choice are read there", async () => {
    const s = await sendingSetup({}, { shard: 1 });
    expect((await trackReplies(s, true)).status).toBe(200);
    const tracked = await sentReplyTo(s);
    expect(await readReplyAddress(SECRET, DOMAIN, tracked.replyTo!)).toBe(tracked.id);
    expect((await sentReplyTo(s, { trackReplies: false })).replyTo).toBeNull();
  });
});
