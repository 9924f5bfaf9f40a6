/**
 * Acting on received mail (issue 37): the email.received webhook event, and a workflow sequence
 * (SEND_EMAIL -> WAIT_FOR_EVENT email.received -> timeout: SEND_EMAIL follow-up) that stops when
 * the contact replies, goes on past an out-of-office, and sends the follow-up when nobody replies.
 */
import { createExecutionContext, introspectWorkflow, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../../src/env";
import worker from "../../../src/index";
import { namedAddress } from "../../../src/services/inbound/receive";
import { replyAddress } from "../../../src/services/inbound/reply-token";
import type { InboundMessageView } from "../../../src/schemas/inbound";
import gmail from "../../fixtures/inbound/gmail-reply.eml?raw";
import outOfOffice from "../../fixtures/inbound/out-of-office.eml?raw";
import { emailMessage } from "../../fakes/email-message";
import type { EmailList, Execution } from "../../support/api";
import { eventually } from "../../support/wait";
import { recordedEvents } from "../../support/webhooks";
import { automationProject } from "../../support/workflows";
import { fill, INBOUND_DOMAIN, inboundSetup, SECRET } from "./harness";

vi.setConfig({ testTimeout: 60_000 });
afterEach(() => vi.restoreAllMocks());

describe("the email.received webhook event", () => {
  it("carries the contract's payload for a reply, and is recorded once however often the message is redelivered", async () => {
    const s = await inboundSetup();
    s.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    s.serve((request) => (request.url.startsWith("https://hooks.example.net/") ? new Response("ok") : undefined));
    const hook = await s.post<{ id: string }>("/webhooks", { url: "https://hooks.example.net/in", events: ["email.received"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const sent = await s.sendTo("ada@example.com");
    await s.receive({ from: "ada@example.com", to: sent.replyTo, raw: fill(gmail, { to: sent.replyTo, from: "ada@example.com", parentId: sent.headerId }) });
    await s.parse(2);

    expect(await recordedEvents(s.project.id, ["email.received"])).toEqual(["email.received"]);
    const row = await env.DB.prepare("SELECT payload FROM webhook_events WHERE project_id = ? AND type = 'email.received'")
      .bind(s.project.id)
      .first<{ payload: string }>();
    const payload = JSON.parse(row!.payload);
    const [item] = (await s.list()).items;
    expect(payload).toMatchObject({
      type: "email.received",
      data: {
        inboundId: item.id,
        emailId: sent.emailId,
        contactId: sent.contactId,
        from: "ada@example.com",
        subject: "Re: Your order has shipped",
        strippedText: "Thanks, that works for me! Could you send it to the office address instead?\n\nAda",
        autoReply: false,
        match: "TOKEN",
        attachments: [],
      },
    });
  });

  it("an auto-reply is a webhook event with autoReply true, though it records no contact event", async () => {
    const s = await inboundSetup();
    s.dns.set("hooks.example.net", "A", ["93.184.216.34"]);
    s.serve((request) => (request.url.startsWith("https://hooks.example.net/") ? new Response("ok") : undefined));
    expect((await s.post("/webhooks", { url: "https://hooks.example.net/in" })).status).toBe(201);
    const to = namedAddress("support", s.project.id, INBOUND_DOMAIN);
    await s.receive({ from: "ada@example.com", to, raw: fill(outOfOffice, { to, from: "ada@example.com" }) });
    await s.parse();
    const row = await env.DB.prepare("SELECT payload FROM webhook_events WHERE project_id = ? AND type = 'email.received'")
      .bind(s.project.id)
      .first<{ payload: string }>();
    expect(JSON.parse(row!.payload).data).toMatchObject({ autoReply: true, match: "NONE", emailId: null });
  });
});

/** signup -> "Welcome" -> wait up to 3 days for a reply -> no reply: "Follow-up". */
async function replySequence() {
  const a = await automationProject();
  const welcome = await a.template("Welcome");
  const followUp = await a.template("Follow-up");
  const workflow = await a.createWorkflow({
    name: "Stop on reply",
    trigger: { type: "EVENT", eventName: "signup" },
    steps: [
      { id: "welcome", type: "SEND_EMAIL", config: { templateId: welcome }, next: "reply" },
      {
        id: "reply",
        type: "WAIT_FOR_EVENT",
        config: { eventName: "email.received", timeout: { amount: 3, unit: "days" } },
        branches: { event: null, timeout: "follow-up" },
      },
      { id: "follow-up", type: "SEND_EMAIL", config: { templateId: followUp } },
    ],
  });
  /** The contact's reply to the welcome email, delivered to email() as Email Routing would (the real inbound queue parses it). */
  async function reply(from: string, eml: string) {
    const emails = await a.project.api.get<EmailList>("/emails");
    const emailId = emails.body.data.items[0].id;
    const to = await replyAddress(SECRET, INBOUND_DOMAIN, emailId);
    const message = emailMessage({ from, to, raw: fill(eml, { to, from }) });
    const ctx = createExecutionContext();
    await worker.email!(message, env as Env, ctx);
    await waitOnExecutionContext(ctx);
    expect(message.rejected).toBeNull();
    return eventually(async () => {
      const res = await a.project.api.get<{ data: { items: InboundMessageView[] } }>(`/inbound?emailId=${emailId}`);
      const parsed = res.body.data.items.filter((i) => i.status === "PARSED");
      expect(parsed.length).toBeGreaterThan(0);
      return parsed[0];
    });
  }
  return { ...a, workflow, reply };
}

const historyOf = (e: Execution) => e.history.map((h) => [h.stepId, h.outcome?.replace(/email \S+ queued/, "queued")]);

describe("a sequence that stops when the contact replies", () => {
  it("a reply to the welcome email ends the wait: the follow-up is never sent", async () => {
    const s = await replySequence();
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    await introspector.modifyAll(async (m) => {
      await m.disableSleeps();
    });
    const { contact } = await s.track("ada@example.com", "signup", { firstName: "Ada" });
    await s.executionWhere(s.workflow.id, (e) => e.contactId === contact && e.status === "WAITING");
    await eventually(async () => expect(await s.delivered()).toEqual(["ada@example.com: Welcome for Ada"]));

    const received = await s.reply("ada@example.com", gmail);
    expect(received).toMatchObject({ match: "TOKEN", contactId: contact, autoReply: false });
    const done = await s.executionWhere(s.workflow.id, (e) => e.status === "COMPLETED");
    expect(historyOf(done)).toEqual([
      ["welcome", "queued"],
      ["reply", "event email.received received"],
    ]);
    expect(await s.delivered()).toEqual(["ada@example.com: Welcome for Ada"]);
  });

  it("an out-of-office does not end the wait; the real reply after it does", async () => {
    const s = await replySequence();
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    await introspector.modifyAll(async (m) => {
      await m.disableSleeps();
    });
    const { contact } = await s.track("bo@example.com", "signup", { firstName: "Bo" });
    await s.executionWhere(s.workflow.id, (e) => e.contactId === contact && e.status === "WAITING");

    const ooo = await s.reply("bo@example.com", outOfOffice);
    expect(ooo.autoReply).toBe(true);
    // Parsed and committed: an out-of-office records no event, so nothing was handed to the workflow.
    const events = await s.project.api.get<{ data: { total: number } }>(`/events?contactId=${contact}&name=email.received`);
    expect(events.body.data.total).toBe(0);
    expect((await s.executions(s.workflow.id))[0].status).toBe("WAITING");

    await s.reply("bo@example.com", gmail);
    await s.executionWhere(s.workflow.id, (e) => e.status === "COMPLETED");
    expect(await s.delivered()).toEqual(["bo@example.com: Welcome for Bo"]);
  });

  it("no reply within 3 days: the follow-up is sent", async () => {
    const s = await replySequence();
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    await introspector.modifyAll(async (m) => {
      await m.disableSleeps();
      await m.forceEventTimeout({ name: "reply:wait" });
    });
    await s.track("cy@example.com", "signup", { firstName: "Cy" });
    const done = await s.executionWhere(s.workflow.id, (e) => e.status === "COMPLETED");
    expect(historyOf(done)).toEqual([
      ["welcome", "queued"],
      ["reply", "timed out"],
      ["follow-up", "queued"],
    ]);
    await eventually(async () => expect(await s.delivered()).toEqual(["cy@example.com: Follow-up for Cy", "cy@example.com: Welcome for Cy"]));
  });
});

describe("a wait for a reply to one email (WAIT_FOR_EVENT replyTo)", () => {
  it("ends only on a reply to the email its SEND_EMAIL step sent; a reply to another email of the contact leaves it waiting", async () => {
    const a = await automationProject();
    const welcome = await a.template("Welcome");
    const tips = await a.template("Tips");
    const workflow = await a.createWorkflow({
      name: "Wait for the welcome's reply",
      trigger: { type: "EVENT", eventName: "signup" },
      steps: [
        { id: "welcome", type: "SEND_EMAIL", config: { templateId: welcome }, next: "tips" },
        { id: "tips", type: "SEND_EMAIL", config: { templateId: tips }, next: "reply" },
        {
          id: "reply",
          type: "WAIT_FOR_EVENT",
          config: { eventName: "email.received", timeout: { amount: 3, unit: "days" }, replyTo: "welcome" },
          branches: { event: null, timeout: null },
        },
      ],
    });
    await using introspector = await introspectWorkflow(env.AUTOMATIONS);
    await introspector.modifyAll(async (m) => {
      await m.disableSleeps();
    });
    const { contact } = await a.track("dee@example.com", "signup", { firstName: "Dee" });
    const waiting = await a.executionWhere(workflow.id, (e) => e.contactId === contact && e.status === "WAITING");
    const sent = (id: string) => /^email (\S+) queued$/.exec(waiting.history.find((h) => h.stepId === id)!.outcome!)![1];

    const replyTo = async (emailId: string) => {
      const to = await replyAddress(SECRET, INBOUND_DOMAIN, emailId);
      const message = emailMessage({ from: "dee@example.com", to, raw: fill(gmail, { to, from: "dee@example.com" }) });
      const ctx = createExecutionContext();
      await worker.email!(message, env as Env, ctx);
      await waitOnExecutionContext(ctx);
      expect(message.rejected).toBeNull();
      await eventually(async () => {
        const res = await a.project.api.get<{ data: { items: InboundMessageView[] } }>(`/inbound?emailId=${emailId}`);
        expect(res.body.data.items.map((i) => i.status)).toEqual(["PARSED"]);
      });
    };
    // A reply to the tips email: an email.received event of the contact, but not of the welcome email.
    await replyTo(sent("tips"));
    const events = await a.project.api.get<{ data: { total: number } }>(`/events?contactId=${contact}&name=email.received`);
    expect(events.body.data.total).toBe(1);
    await new Promise((r) => setTimeout(r, 500));
    expect((await a.executions(workflow.id))[0].status).toBe("WAITING");

    await replyTo(sent("welcome"));
    const done = await a.executionWhere(workflow.id, (e) => e.status === "COMPLETED");
    expect(done.history.at(-1)).toMatchObject({ stepId: "reply", outcome: "event email.received received" });
  });

  it("must name a SEND_EMAIL step and wait for email.received (422 naming replyTo)", async () => {
    const a = await automationProject();
    const welcome = await a.template("Welcome");
    const wait = (config: Record<string, unknown>) => ({
      name: "x",
      trigger: { type: "EVENT", eventName: "signup" },
      steps: [
        { id: "welcome", type: "SEND_EMAIL", config: { templateId: welcome }, next: "reply" },
        { id: "reply", type: "WAIT_FOR_EVENT", config: { timeout: { amount: 1, unit: "days" }, ...config } },
      ],
    });
    for (const config of [
      { eventName: "email.received", replyTo: "reply" },
      { eventName: "email.received", replyTo: "nope" },
      { eventName: "clicked", replyTo: "welcome" },
    ]) {
      const res = await a.project.api.post("/workflows", wait(config));
      expect(res.status, JSON.stringify(config)).toBe(422);
      expect((res.body as { error: { errors: { field: string }[] } }).error.errors.map((e) => e.field)).toEqual(["steps.1.config.replyTo"]);
    }
  });
});
